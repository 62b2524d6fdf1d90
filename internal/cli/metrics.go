package cli

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// /metrics tells the service's traffic, routes and queue depth: it is
// served only to operations, on the main address to requests bearing the
// operations token ($AIUSAGE_METRICS_TOKEN), and without a token on a
// separate address (--metrics-addr) meant for a private network.

// envMetricsToken holds the operations token; it has no flag, so that it
// never sits on a command line.
const envMetricsToken = "AIUSAGE_METRICS_TOKEN"

// minMetricsToken is the shortest operations token accepted.
const minMetricsToken = 16

// metricsServing are the commands that serve /metrics.
var metricsServing = []string{"demo", "provider serve", "service serve"}

// metricsHelp is the part of the help of those commands about /metrics.
const metricsHelp = `/metrics (Prometheus) is for operations only: on the main address it answers
404 unless $AIUSAGE_METRICS_TOKEN is set (at least 16 characters), and then
only requests with "Authorization: Bearer TOKEN" (others get 401); with
--metrics-addr ADDR it is also served, without a token, on that separate
address (keep it on a private network).`

// metricsFlags is the --metrics-addr flag.
type metricsFlags struct {
	addr string
	// url is where serve serves /metrics, once it does.
	url string
}

func (m *metricsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.addr, "metrics-addr", "", "`ADDR` of a separate listener serving /metrics without a token (host:port; default: none, /metrics on the main address needs $AIUSAGE_METRICS_TOKEN)")
}

// token returns the operations token of the environment, "" when none; a
// token too short is a usage error.
func metricsToken(cmd string, e *env) (string, error) {
	t := strings.TrimSpace(e.getenv(envMetricsToken))
	if t != "" && len(t) < minMetricsToken {
		return "", usagef("%s: $%s is %d characters, at least %d", cmd, envMetricsToken, len(t), minMetricsToken)
	}
	return t, nil
}

// guardMetrics serves h only to requests with "Authorization: Bearer
// token"; with no token, it answers 404 to every request.
func guardMetrics(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if token == "" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte("/metrics is not served on this address: the operator sets " + envMetricsToken + " or --metrics-addr.\n"))
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte("/metrics needs the operations token: Authorization: Bearer TOKEN.\n"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// serve starts, with --metrics-addr, a listener serving h at GET /metrics
// and nothing else, and returns the function that stops it. An address that
// cannot be listened on is a usage error.
func (m *metricsFlags) serve(ctx context.Context, cmd string, log *slog.Logger, h http.Handler) (stop func(), _ error) {
	if m.addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", m.addr)
	if err != nil {
		return nil, usagef("%s: --metrics-addr: %v", cmd, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener", "error", err)
		}
	})
	m.url = "http://" + ln.Addr().String() + "/metrics"
	log.LogAttrs(ctx, slog.LevelInfo, "metrics serving", slog.String("url", m.url))
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		wg.Wait()
	}, nil
}
