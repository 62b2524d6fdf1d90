package sqlpage_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/infra/sqlpage"
	"github.com/aiusage/kit/provider"
)

// rowsSQL are four rows (time, id, body or NULL, extra) in list order.
const rowsSQL = `SELECT column1, column2, column3, column4 FROM (VALUES
	(1, 'a', '{"a":1}', 7), (2, 'b', NULL, 7), (3, 'c', '{"c":333}', 9), (4, 'd', '{"d":4}', 7)) AS v`

// read reads rowsSQL (the first limit+1 rows) with a Reader in mode.
func read(t *testing.T, db *sqldb.DB, limit, maxBytes int, mode sqlpage.Mode, query string) (provider.Page[provider.RawRecord], error) {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), query)
	require.NoError(t, err)
	defer rows.Close()
	var (
		at   int64
		id   string
		body sql.RawBytes
	)
	r := sqlpage.Reader{
		Limit: limit, MaxBytes: maxBytes, Mode: mode, Dest: []any{&at, &id, &body}, Body: &body,
		Append: func(buf []byte) ([]byte, provider.Key, error) {
			return append(buf, body...), provider.Key{Time: time.UnixMilli(at).UTC(), ID: id}, nil
		},
		DBError: func(err error) error { return errors.New("db: " + err.Error()) },
	}
	if mode == sqlpage.Plain {
		r.Dest = r.Dest[:3]
		r.Tail = []any{new(int64)} // the fourth column, after the (absent) mode's
	}
	return r.Read(rows)
}

func ids(p provider.Page[provider.RawRecord]) []string {
	var out []string
	for _, r := range p.Items {
		out = append(out, r.Key.ID)
	}
	return out
}

// TestReader checks the page a Reader makes of each mode's rows: the
// limit, the byte budget, the records joined by commas in one buffer as
// the list serves them.
func TestReader(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		noNull := `SELECT column1, column2, column3, column4 FROM (VALUES
	(1, 'a', '{"a":1}', 7), (2, 'b', '{"b":22}', 8), (3, 'c', '{"c":333}', 9)) AS v`
		p, err := read(t, db, 2, 0, sqlpage.Plain, noNull)
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b"}, ids(p))
		require.True(t, p.HasMore)
		first := p.Items[0].JSON
		require.Equal(t, `{"a":1},{"b":22}`, string(first[:len(first)+1+len(p.Items[1].JSON)]), "joined by commas")
		require.Equal(t, time.UnixMilli(2).UTC(), p.Items[1].Key.Time)

		p, err = read(t, db, 3, 0, sqlpage.Plain, noNull)
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b", "c"}, ids(p))
		require.False(t, p.HasMore)

		// Guarded: the second body fits the budget but was left out.
		_, err = read(t, db, 3, 100, sqlpage.Guarded, rowsSQL)
		require.ErrorIs(t, err, sqlpage.ErrSized)
		// ... it does not fit: the page ends before it.
		p, err = read(t, db, 3, 14, sqlpage.Guarded, rowsSQL)
		require.NoError(t, err)
		require.Equal(t, []string{"a"}, ids(p))
		require.True(t, p.HasMore)
		// The first record is always served, however large.
		p, err = read(t, db, 3, 1, sqlpage.Guarded, rowsSQL)
		require.NoError(t, err)
		require.Equal(t, []string{"a"}, ids(p))

		// Sized: the rows are numbered, the NULL body ends the page.
		sized := `SELECT column1, column2, column3, column4 FROM (VALUES
	(1, 'a', '{"a":1}', 1), (2, 'b', '{"b":22}', 2), (3, 'c', NULL, 3)) AS v`
		p, err = read(t, db, 5, 100, sqlpage.Sized, sized)
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b"}, ids(p))
		require.True(t, p.HasMore)
		_, err = read(t, db, 5, 100, sqlpage.Sized, rowsSQL)
		require.ErrorContains(t, err, "db: sized page: row 7 came as row 1")
	})
}

func TestRead(t *testing.T) {
	t.Parallel()
	var modes []sqlpage.Mode
	read := func(m sqlpage.Mode) (int, error) {
		modes = append(modes, m)
		if m == sqlpage.Guarded {
			return 0, sqlpage.ErrSized
		}
		return 1, nil
	}
	n, err := sqlpage.Read(0, read)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []sqlpage.Mode{sqlpage.Plain}, modes)
	modes = nil
	n, err = sqlpage.Read(100, read)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []sqlpage.Mode{sqlpage.Guarded, sqlpage.Sized}, modes)
}

func TestDecode(t *testing.T) {
	t.Parallel()
	p := provider.Page[provider.RawRecord]{Items: []provider.RawRecord{{Key: provider.Key{ID: "x"}, JSON: []byte(`{"id":"x"}`)}}, HasMore: true}
	got, err := sqlpage.Decode[struct{ ID string }]("pkg: list", p, nil)
	require.NoError(t, err)
	require.Equal(t, "x", got.Items[0].ID)
	require.True(t, got.HasMore)
	p.Items[0].JSON = []byte(`[`)
	_, err = sqlpage.Decode[struct{ ID string }]("pkg: list", p, nil)
	require.ErrorContains(t, err, `pkg: list: stored record "x": `)
}

func TestCheckLimit(t *testing.T) {
	t.Parallel()
	require.NoError(t, sqlpage.CheckLimit(1))
	require.NoError(t, sqlpage.CheckLimit(provider.MaxLimit))
	require.ErrorIs(t, sqlpage.CheckLimit(0), provider.ErrInvalid)
	require.ErrorIs(t, sqlpage.CheckLimit(provider.MaxLimit+1), provider.ErrInvalid)
}

func TestDBError(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	require.EqualError(t, sqlpage.DBError(ctx, "pkg", "op", errors.New("boom")), "pkg: op: boom")
	require.ErrorIs(t, sqlpage.DBError(ctx, "pkg", "op", sql.ErrConnDone), provider.ErrUnavailable)
	cancel()
	require.ErrorIs(t, sqlpage.DBError(ctx, "pkg", "op", errors.New("boom")), context.Canceled)
}
