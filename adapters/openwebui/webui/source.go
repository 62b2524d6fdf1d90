package webui

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the "sqlite" database/sql driver

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// Dialect names the database Open WebUI keeps its tables in.
type Dialect string

// The databases Open WebUI supports and the Source reads.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Config configures a [Source].
type Config struct {
	// Tenant is the name under which the database's data is served; the
	// provider's credentials must name it. Required.
	Tenant string
}

// Source is a read-only [provider.DataSource] over an Open WebUI database.
// It is safe for concurrent use: every call runs its own queries.
type Source struct {
	db      *sql.DB
	dialect Dialect
	tenant  string
}

var _ provider.DataSource = (*Source)(nil)

// New returns a Source over db, a pool on an Open WebUI database of dialect
// d. The Source never writes; it leaves db open.
func New(db *sql.DB, d Dialect, cfg Config) (*Source, error) {
	if db == nil {
		return nil, errors.New("webui: New: db is nil")
	}
	if d != SQLite && d != Postgres {
		return nil, fmt.Errorf("webui: New: dialect %q: want %q or %q", d, SQLite, Postgres)
	}
	if cfg.Tenant == "" {
		return nil, errors.New("webui: New: Config.Tenant is required")
	}
	return &Source{db: db, dialect: d, tenant: cfg.Tenant}, nil
}

// OpenDB opens a pool on the Open WebUI database at dsn: a postgres:// (or
// postgresql://) URL, or the path of a SQLite file. With readOnly, a SQLite
// file is opened read-only (it must exist) and a PostgreSQL session starts
// its transactions read-only. It pings the database before returning.
func OpenDB(ctx context.Context, dsn string, readOnly bool) (*sql.DB, Dialect, error) {
	driver, d, conn := "sqlite", SQLite, ""
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		driver, d, conn = "pgx", Postgres, dsn
		if readOnly {
			u, err := url.Parse(dsn)
			if err != nil {
				return nil, "", fmt.Errorf("webui: database URL: %w", err)
			}
			q := u.Query()
			q.Set("default_transaction_read_only", "on")
			u.RawQuery = q.Encode()
			conn = u.String()
		}
	case dsn == "":
		return nil, "", errors.New("webui: no database given: want a SQLite file path or a postgres:// URL")
	default:
		params := url.Values{}
		params.Add("_pragma", "busy_timeout(5000)")
		if readOnly {
			params.Add("mode", "ro")
			params.Add("_pragma", "query_only(1)")
		}
		conn = "file:" + dsn + "?" + params.Encode()
	}
	db, err := sql.Open(driver, conn)
	if err != nil {
		return nil, "", fmt.Errorf("webui: open %s database: %w", d, err)
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, "", fmt.Errorf("webui: open %s database: %w", d, err)
	}
	return db, d, nil
}

// Open opens the Open WebUI database at dsn read-only (see [OpenDB]) and
// returns a Source over it, which owns the pool: close it with
// [Source.Close].
func Open(ctx context.Context, dsn string, cfg Config) (*Source, error) {
	db, d, err := OpenDB(ctx, dsn, true)
	if err != nil {
		return nil, err
	}
	s, err := New(db, d, cfg)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the Source's pool.
func (s *Source) Close() error { return s.db.Close() }

// query runs q, written with ? placeholders, rewriting them as $n on
// PostgreSQL.
func (s *Source) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("webui: query: %w", err)
	}
	return rows, nil
}

func (s *Source) rebind(q string) string {
	if s.dialect != Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// binary makes col compare byte by byte, as the keyset contract wants ids
// to: SQLite's default collation does; PostgreSQL's database collation may
// not.
func (s *Source) binary(col string) string {
	if s.dialect == Postgres {
		return col + ` COLLATE "C"`
	}
	return col
}

// placeholders returns "?, ?, ..." for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// strArgs turns ids into query arguments.
func strArgs(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// keyset appends the condition "strictly after key" over a time column
// holding epoch seconds and an id column. The key's time has milliseconds;
// the column compares in whole seconds, so that an index on it serves the
// range: a key between two seconds is after every row of the earlier one.
func (s *Source) keyset(where []string, args []any, timeCol, idCol string, after *provider.Key) ([]string, []any) {
	if after == nil {
		return where, args
	}
	ms := after.Time.UnixMilli()
	if ms%1000 != 0 {
		return append(where, timeCol+" > ?"), append(args, floorSeconds(ms))
	}
	where = append(where, fmt.Sprintf("(%[1]s > ? OR (%[1]s = ? AND %[2]s > ?))", timeCol, s.binary(idCol)))
	return where, append(args, ms/1000, ms/1000, after.ID)
}

// floorSeconds and ceilSeconds turn a millisecond bound into the whole
// seconds a column of seconds compares with: t*1000 > ms is t > floor(ms/1000),
// and t*1000 >= ms is t >= ceil(ms/1000).
func floorSeconds(ms int64) int64 {
	s := ms / 1000
	if ms%1000 < 0 {
		s--
	}
	return s
}

func ceilSeconds(ms int64) int64 { return -floorSeconds(-ms) }

// secondsTime converts an epoch-seconds column value.
func secondsTime(v int64) spec.Time { return spec.NewTime(time.Unix(v, 0)) }

// epochTime converts an epoch timestamp of unknown unit, as found inside
// Open WebUI's JSON (seconds for messages, milliseconds for the chat, and
// older clients that wrote milliseconds where seconds belong): a value past
// the year 5138 in seconds is read as milliseconds, and so on down to
// nanoseconds.
func epochTime(v float64) time.Time {
	switch {
	case v <= 0:
		return time.Time{}
	case v > 1e17:
		return time.Unix(0, int64(v))
	case v > 1e14:
		return time.UnixMicro(int64(v))
	case v > 1e11:
		return time.UnixMilli(int64(v))
	default:
		sec := int64(v)
		return time.Unix(sec, int64((v-float64(sec))*1e9))
	}
}

// ownTenant reports whether tenant is the one the database belongs to.
func (s *Source) ownTenant(tenant string) bool { return tenant == s.tenant }
