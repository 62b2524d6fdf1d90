package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/internal/infra/sqldb"
)

// CheckTimeout bounds each readiness check run by /readyz.
const CheckTimeout = 2 * time.Second

// ReadyCheck is one condition of readiness, run by /readyz: Check returns nil
// when the dependency named Name is usable. Check is called with a context
// bounded by [CheckTimeout] and must honour it.
type ReadyCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// Health returns a function that mounts the two probe routes on a chi
// router:
//
//	GET /healthz  200 {"status":"ok"} whenever the process serves (liveness)
//	GET /readyz   200 {"status":"ready"} when every check passes, else
//	              503 {"status":"not ready","checks":{"<name>":"<error>",...}}
//	              listing the failing checks only (readiness)
//
// HEAD is answered on both. Use it as r.Group(ops.Health(checks...)). Mount
// the probes outside any authentication.
func Health(checks ...ReadyCheck) func(chi.Router) {
	healthz, readyz := HealthzHandler(), ReadyzHandler(checks...)
	return func(r chi.Router) {
		r.Get("/healthz", healthz.ServeHTTP)
		r.Head("/healthz", healthz.ServeHTTP)
		r.Get("/readyz", readyz.ServeHTTP)
		r.Head("/readyz", readyz.ServeHTTP)
	}
}

// HealthzHandler answers 200 {"status":"ok"}, for GET /healthz on servers
// that are not chi routers.
func HealthzHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, r, http.StatusOK, map[string]any{"status": "ok"})
	})
}

// ReadyzHandler runs every check concurrently, each bounded by
// [CheckTimeout] and by the request, and answers as GET /readyz of [Health]
// does.
func ReadyzHandler(checks ...ReadyCheck) http.Handler {
	checks = slices.Clone(checks)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		failed := runChecks(r.Context(), checks)
		if len(failed) == 0 {
			writeJSON(w, r, http.StatusOK, map[string]any{"status": "ready"})
			return
		}
		writeJSON(w, r, http.StatusServiceUnavailable, map[string]any{"status": "not ready", "checks": failed})
	})
}

// runChecks returns the error messages of the failing checks, by name.
func runChecks(ctx context.Context, checks []ReadyCheck) map[string]string {
	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		failed = map[string]string{}
	)
	for _, c := range checks {
		wg.Go(func() {
			err := runCheck(ctx, c)
			if err == nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			failed[c.Name] = err.Error()
		})
	}
	wg.Wait()
	return failed
}

func runCheck(ctx context.Context, c ReadyCheck) (err error) {
	if c.Check == nil {
		return errors.New("no check function")
	}
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("check panicked: %v", p)
		}
	}()
	return c.Check(ctx)
}

func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

// DBCheck returns the readiness check named "database": db answers a ping,
// and for every component (name → its migrations, such as
// reviewapi.Component → reviewapi.Migrations()) every migration of db's
// dialect is applied (see [sqldb.DB.MigrationsApplied]). It is bounded by
// [CheckTimeout] even when called on its own.
func DBCheck(db *sqldb.DB, components map[string]fs.FS) ReadyCheck {
	names := make([]string, 0, len(components))
	for name := range components {
		names = append(names, name)
	}
	slices.Sort(names)
	return ReadyCheck{Name: "database", Check: func(ctx context.Context) error {
		if db == nil {
			return errors.New("no database")
		}
		ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
		defer cancel()
		if err := db.PingContext(ctx); err != nil {
			return fmt.Errorf("ping: %w", err)
		}
		for _, name := range names {
			ok, err := db.MigrationsApplied(ctx, name, components[name])
			switch {
			case err != nil:
				return fmt.Errorf("migrations of %s: %w", name, err)
			case !ok:
				return fmt.Errorf("migrations of %s not applied", name)
			}
		}
		return nil
	}}
}
