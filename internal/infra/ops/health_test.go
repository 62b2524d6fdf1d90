package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/ops"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// probe is the decoded answer of /healthz or /readyz.
type probe struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
}

// call serves one request to the probes of checks and decodes the answer.
func call(t *testing.T, method, path string, checks ...ops.ReadyCheck) (int, probe) {
	t.Helper()
	r := chi.NewRouter()
	r.Group(ops.Health(checks...))
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), method, path, nil))
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	require.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	var p probe
	if method != http.MethodHead {
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p), rec.Body.String())
	} else {
		require.Empty(t, rec.Body.String())
	}
	return rec.Code, p
}

func migrations(versions ...string) fs.FS {
	fsys := fstest.MapFS{}
	for _, v := range versions {
		fsys["sqlite/"+v+".sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE t" + v + " (id INTEGER PRIMARY KEY)")}
		fsys["postgres/"+v+".sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE t" + v + " (id BIGINT PRIMARY KEY)")}
	}
	return fsys
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	failing := ops.ReadyCheck{Name: "x", Check: func(context.Context) error { return errors.New("down") }}
	code, p := call(t, http.MethodGet, "/healthz", failing)
	require.Equal(t, http.StatusOK, code, "liveness ignores the readiness checks")
	require.Equal(t, probe{Status: "ok"}, p)
	code, _ = call(t, http.MethodHead, "/healthz")
	require.Equal(t, http.StatusOK, code)

	rec := httptest.NewRecorder()
	ops.HealthzHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.JSONEq(t, `{"status":"ok"}`, rec.Body.String())
}

func TestReadyzChecks(t *testing.T) {
	t.Parallel()
	code, p := call(t, http.MethodGet, "/readyz")
	require.Equal(t, http.StatusOK, code, "no checks: ready")
	require.Equal(t, probe{Status: "ready"}, p)

	var deadline time.Duration
	ok := ops.ReadyCheck{Name: "ok", Check: func(ctx context.Context) error {
		d, has := ctx.Deadline()
		require.True(t, has)
		deadline = time.Until(d)
		return nil
	}}
	code, p = call(t, http.MethodGet, "/readyz", ok)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ready", p.Status)
	require.Positive(t, deadline)
	require.LessOrEqual(t, deadline, ops.CheckTimeout)

	checks := []ops.ReadyCheck{
		ok,
		{Name: "queue", Check: func(context.Context) error { return errors.New("queue unreachable") }},
		{Name: "slow", Check: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }},
		{Name: "panics", Check: func(context.Context) error { panic("oops") }},
		{Name: "nil"},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond) // the request's context bounds the checks
	defer cancel()
	r := chi.NewRouter()
	r.Group(ops.Health(checks...))
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/readyz", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	var got probe
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	require.Equal(t, "not ready", got.Status)
	require.Equal(t, map[string]string{
		"queue":  "queue unreachable",
		"slow":   context.DeadlineExceeded.Error(),
		"panics": "check panicked: oops",
		"nil":    "no check function",
	}, got.Checks)

	code, _ = call(t, http.MethodHead, "/readyz", checks[1])
	require.Equal(t, http.StatusServiceUnavailable, code)
}

func TestDBCheck(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		require.NoError(t, db.Migrate(ctx, "alpha", migrations("0001_a", "0002_b")))
		require.NoError(t, db.Migrate(ctx, "beta", migrations("0001_c")))

		code, p := call(t, http.MethodGet, "/readyz", ops.DBCheck(db, map[string]fs.FS{
			"alpha": migrations("0001_a", "0002_b"),
			"beta":  migrations("0001_c"),
		}))
		require.Equal(t, http.StatusOK, code, p.Checks)
		require.Equal(t, probe{Status: "ready"}, p)

		code, _ = call(t, http.MethodGet, "/readyz", ops.DBCheck(db, nil))
		require.Equal(t, http.StatusOK, code, "ping only")

		// A newer binary with a migration the database lacks.
		code, p = call(t, http.MethodGet, "/readyz", ops.DBCheck(db, map[string]fs.FS{
			"alpha": migrations("0001_a", "0002_b"),
			"beta":  migrations("0001_c", "0002_d"),
		}))
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, probe{Status: "not ready", Checks: map[string]string{"database": "migrations of beta not applied"}}, p)

		// A component never migrated.
		code, p = call(t, http.MethodGet, "/readyz", ops.DBCheck(db, map[string]fs.FS{"gamma": migrations("0001_e")}))
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, "migrations of gamma not applied", p.Checks["database"])

		// Malformed migrations.
		code, p = call(t, http.MethodGet, "/readyz", ops.DBCheck(db, map[string]fs.FS{"alpha": fstest.MapFS{}}))
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Contains(t, p.Checks["database"], "migrations of alpha: ")

		// The database is closed.
		require.NoError(t, db.Close())
		code, p = call(t, http.MethodGet, "/readyz", ops.DBCheck(db, map[string]fs.FS{"alpha": migrations("0001_a", "0002_b")}))
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Contains(t, p.Checks["database"], "ping: ")
	})
}

func TestDBCheckEmptyDatabase(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		// No schema_migrations table at all.
		code, p := call(t, http.MethodGet, "/readyz", ops.DBCheck(db, map[string]fs.FS{"alpha": migrations("0001_a")}))
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, "migrations of alpha not applied", p.Checks["database"])
	})
}

func TestDBCheckNilDB(t *testing.T) {
	t.Parallel()
	c := ops.DBCheck(nil, nil)
	require.Equal(t, "database", c.Name)
	require.EqualError(t, c.Check(t.Context()), "no database")
}
