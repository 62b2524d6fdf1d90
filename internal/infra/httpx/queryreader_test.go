package httpx_test

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/httpx"
)

// listQuery is what readList reads: a list's filters and page.
type listQuery struct {
	Status string
	From   time.Time
	Limit  int
	Offset int
	Cursor string
}

// readList reads a list's parameters in the order a handler would.
func readList(raw string, style httpx.QueryStyle) (listQuery, error) {
	q := listQuery{Limit: 20}
	r := httpx.ReadQuery(raw, style)
	r.Enum("status", &q.Status, "open", "closed")
	r.Time("from", &q.From)
	r.Int("limit", &q.Limit, 1, 100)
	r.Int("offset", &q.Offset, 0, math.MaxInt)
	q.Cursor, _ = r.String("cursor")
	return q, r.Err()
}

// fieldErr is an API's own error about a field, as a style's Invalid builds.
type fieldErr struct{ field, message string }

func (e fieldErr) Error() string { return e.field + ": " + e.message }

// queryErr returns the *QueryError err is, failing the test otherwise.
func queryErr(t *testing.T, err error) *httpx.QueryError {
	t.Helper()
	var qe *httpx.QueryError
	require.True(t, errors.As(err, &qe), "%v (%T) is not a *QueryError", err, err)
	return qe
}

func TestQueryReaderValues(t *testing.T) {
	t.Parallel()
	q, err := readList("status=closed&from=2026-03-02T09:00:00.5Z&limit=100&offset=0&cursor=c%2Fd&other=1&other=2", httpx.QueryStyle{})
	require.NoError(t, err)
	require.Equal(t, listQuery{Status: "closed", From: time.Date(2026, 3, 2, 9, 0, 0, 5e8, time.UTC), Limit: 100, Cursor: "c/d"}, q,
		"every parameter read; an unknown one, even repeated, ignored")

	q, err = readList("", httpx.QueryStyle{})
	require.NoError(t, err)
	require.Equal(t, listQuery{Limit: 20}, q, "absent parameters leave their defaults")

	q, err = readList("status=&from=&cursor=", httpx.QueryStyle{})
	require.NoError(t, err)
	require.Equal(t, listQuery{Limit: 20}, q, "an empty choice or bound is none; an empty string is read as given")

	q, err = readList("from=2026-03-02T11:00:00%2B02:00", httpx.QueryStyle{})
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), q.From, "a time is read in UTC")
}

func TestQueryReaderDefaultErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ raw, param, message string }{
		{"cursor=%%%", "cursor", `has a malformed percent-encoding in "%%%"; write a literal % as %25`},
		{"a=1;b=2", "query", `cannot be parsed: "a=1;b=2" contains a semicolon; separate parameters with &`},
		{"limit=1&limit=2", "limit", "is given 2 times; give it once"},
		{"cursor=%ff", "cursor", "is not valid UTF-8"},
		{"status=%ff", "status", "is not valid UTF-8"},
		{"status=Open", "status", `must be one of open, closed, got "Open"`},
		{"from=yesterday", "from", `must be an RFC 3339 timestamp such as 2026-01-02T03:04:05Z, got "yesterday"`},
		{"from=2026-03-02T11:00:00+02:00", "from", `must be an RFC 3339 timestamp such as 2026-01-02T03:04:05Z, got "2026-03-02T11:00:00 02:00"` +
			` (a "+" in a query string means a space: send an offset's + as %2B)`},
		{"limit=", "limit", `must be an integer from 1 to 100, got ""`},
		{"limit=0", "limit", `must be an integer from 1 to 100, got "0"`},
		{"limit=101", "limit", `must be an integer from 1 to 100, got "101"`},
		{"limit=1.5", "limit", `must be an integer from 1 to 100, got "1.5"`},
		{"offset=-1", "offset", `must be an integer of at least 0, got "-1"`},
		{"offset=99999999999999999999", "offset", `must be an integer of at least 0, got "99999999999999999999"`},
		// The first bad parameter in the order of reading wins, not in the
		// order of the query.
		{"offset=x&limit=x&status=x", "status", `must be one of open, closed, got "x"`},
		{"offset=x&limit=x", "limit", `must be an integer from 1 to 100, got "x"`},
		// A query that cannot be parsed wins over every parameter.
		{"status=x&%zz=1", "query", `cannot be parsed: the parameter name "%zz" has a malformed percent-encoding; write a literal % as %25`},
	} {
		_, err := readList(tc.raw, httpx.QueryStyle{})
		qe := queryErr(t, err)
		require.Equal(t, tc.param, qe.Param, tc.raw)
		require.Equal(t, tc.message, qe.Message, tc.raw)
	}
}

func TestQueryReaderStyle(t *testing.T) {
	t.Parallel()
	style := httpx.QueryStyle{
		Invalid:          func(param, message string) error { return fieldErr{param, message} },
		NamePrefix:       true,
		RejectEmpty:      true,
		AllowInvalidUTF8: true,
		Quote:            func(v string) string { return "<" + v + ">" },
	}
	for _, tc := range []struct{ raw, field, message string }{
		{"cursor=%%%", "cursor", `has a malformed percent-encoding in "%%%"; write a literal % as %25`}, // never prefixed
		{"limit=1&limit=2", "limit", "limit is given 2 times; give it once"},
		{"cursor=", "cursor", "cursor is empty; give a value or leave the parameter out"},
		{"status=", "status", "status is empty; give a value or leave the parameter out"},
		{"status=%ff", "status", "status must be one of open, closed, got <\xff>"},
		{"from=x", "from", "from must be an RFC 3339 timestamp such as 2026-01-02T03:04:05Z, got <x>"},
		{"limit=x", "limit", "limit must be an integer from 1 to 100, got <x>"},
	} {
		_, err := readList(tc.raw, style)
		var fe fieldErr
		require.True(t, errors.As(err, &fe), "%s: %v", tc.raw, err)
		require.Equal(t, fieldErr{tc.field, tc.message}, fe, tc.raw)
	}
	q, err := readList("cursor=%ff", style)
	require.NoError(t, err)
	require.Equal(t, "\xff", q.Cursor, "a value that is not UTF-8 is passed on")

	style.BadInt = func(lo, hi int, v string) string { return fmt.Sprintf("wants %d..%d, not %s", lo, hi, v) }
	style.BadEnum = func(allowed []string, v string) string {
		return fmt.Sprintf("wants %s, not %s", strings.Join(allowed, "|"), v)
	}
	style.BadTime = func(v string) string { return "wants a time, not " + v }
	for _, tc := range []struct{ raw, message string }{
		{"limit=0", "limit wants 1..100, not 0"},
		{"offset=x", "offset wants 0.." + strconv.Itoa(math.MaxInt) + ", not x"},
		{"status=x", "status wants open|closed, not x"},
		{"from=x", "from wants a time, not x"},
	} {
		_, err := readList(tc.raw, style)
		require.Equal(t, tc.message, err.(fieldErr).message, tc.raw)
	}
}

func TestQueryReaderFirstErrorWins(t *testing.T) {
	t.Parallel()
	r := httpx.ReadQuery("limit=0&status=open&from=2026-03-02T09:00:00Z&n=5&s=x", httpx.QueryStyle{})
	limit := 7
	require.False(t, r.Int("limit", &limit, 1, 10))
	require.Equal(t, 7, limit, "a bad value leaves the destination alone")
	first := r.Err()
	require.Equal(t, "limit", queryErr(t, first).Param)

	// Later reads, even of good values, return nothing and change nothing.
	var status string
	var from time.Time
	n := 1
	require.False(t, r.Enum("status", &status, "open"))
	require.False(t, r.Time("from", &from))
	require.False(t, r.Int("n", &n, 0, 10))
	s, ok := r.String("s")
	require.False(t, ok)
	require.Empty(t, s)
	require.Equal(t, "", status)
	require.True(t, from.IsZero())
	require.Equal(t, 1, n)
	r.Fail("s", "is wrong too")
	require.Same(t, first, r.Err(), "the first error stays")
}

func TestQueryReaderFail(t *testing.T) {
	t.Parallel()
	r := httpx.ReadQuery("ids=a,b", httpx.QueryStyle{NamePrefix: true})
	ids, ok := r.String("ids")
	require.True(t, ok)
	require.NoError(t, r.Err())
	if len(strings.Split(ids, ",")) > 1 {
		r.Fail("ids", "names %d ids; at most %d", 2, 1)
	}
	qe := queryErr(t, r.Err())
	require.Equal(t, httpx.QueryError{Param: "ids", Message: "ids names 2 ids; at most 1"}, *qe)
}

func TestNewQueryReader(t *testing.T) {
	t.Parallel()
	v := url.Values{"limit": {"5"}, "cursor": {"a", "b"}}
	r := httpx.NewQueryReader(v, httpx.QueryStyle{})
	var limit int
	require.True(t, r.Int("limit", &limit, 1, 10))
	require.Equal(t, 5, limit)
	_, ok := r.String("cursor")
	require.False(t, ok)
	require.Equal(t, "cursor", queryErr(t, r.Err()).Param)
}

// FuzzReadQuery reads a query string with the reader, in each style, and
// checks that it does not panic, that the first error names a parameter the
// query holds (or "query" when it cannot be parsed), and that every value
// read is one its check allows.
func FuzzReadQuery(f *testing.F) {
	for _, seed := range []string{"", "status=open&limit=5", "limit=0&status=x", "limit=1&limit=2", "status=", "from=2026-01-02T03:04:05Z",
		"from=2026-01-02T03:04:05+01:00", "offset=-1", "cursor=%ff", "%zz=1", "a=1;b=2", "cursor=%%%", "l%69mit=101", "&&=&status=closed"} {
		f.Add(seed)
	}
	styles := []httpx.QueryStyle{
		{},
		{NamePrefix: true, RejectEmpty: true, AllowInvalidUTF8: true, Quote: func(v string) string { return strconv.Quote(v[:min(len(v), 8)]) }},
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, style := range styles {
			q, err := readList(raw, style)
			if err != nil {
				qe := queryErr(t, err)
				if qe.Message == "" {
					t.Fatalf("%q: an error without a message", raw)
				}
				if qe.Param != "query" {
					if _, ok := wantKey(raw, qe.Param); !ok {
						t.Fatalf("%q: blames %q, which it does not hold", raw, qe.Param)
					}
				}
				continue
			}
			if q.Status != "" && !slices.Contains([]string{"open", "closed"}, q.Status) ||
				q.Limit < 1 || q.Limit > 100 || q.Offset < 0 || q.From.Location() != time.UTC {
				t.Fatalf("%q: accepted as %+v", raw, q)
			}
		}
	})
}
