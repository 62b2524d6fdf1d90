package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/infra/httpx"
)

// serverFlags are the flags of every command that serves HTTP: demo,
// provider serve, service serve and webhook listen. Each declares them with
// [serverFlags.register] and runs its server with [serverFlags.serve].
type serverFlags struct {
	addr            string
	logFormat       string
	shutdownTimeout time.Duration
	// deadlines bound each request's body and answer (--read-timeout,
	// --write-timeout, --stream-timeout).
	deadlines httpx.Deadlines
	// maxConns and maxConnsPerAddr bound the connections open at once
	// (--max-connections, --max-connections-per-address).
	maxConns        connBound
	maxConnsPerAddr int
	// headerTimeout bounds the time a request's headers may take to arrive,
	// idleTimeout the time a kept-alive connection may wait for its next
	// request (--header-timeout, --idle-timeout).
	headerTimeout, idleTimeout time.Duration
}

// Defaults of the connection flags.
const (
	defaultHeaderTimeout = 10 * time.Second
	defaultIdleTimeout   = 30 * time.Second
)

// connBound is the value of --max-connections: "auto" (the default,
// [httpx.DefaultMaxConnections]) or a number, 0 for no bound.
type connBound struct {
	n    int
	auto bool
}

func (b *connBound) String() string {
	if b == nil || b.auto {
		return "auto"
	}
	return strconv.Itoa(b.n)
}

func (b *connBound) Set(v string) error {
	if v == "auto" {
		*b = connBound{auto: true}
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return errors.New(`want auto or a number of connections, 0 for no bound`)
	}
	*b = connBound{n: n}
	return nil
}

// value returns the bound: the default for auto.
func (b connBound) value() int {
	if b.auto {
		return httpx.DefaultMaxConnections()
	}
	return b.n
}

// register declares --addr, --log-format, --shutdown-timeout and the
// request deadlines on fs, with
// the command's default address and shutdown timeout.
func (s *serverFlags) register(fs *flag.FlagSet, addr string, shutdownTimeout time.Duration) {
	fs.StringVar(&s.addr, "addr", addr, "`ADDR` to listen on (host:port; port 0 picks a free port)")
	fs.StringVar(&s.logFormat, "log-format", "text", "log `FORMAT`: text or json")
	fs.DurationVar(&s.shutdownTimeout, "shutdown-timeout", shutdownTimeout, "how long to let requests in flight finish on shutdown")
	fs.DurationVar(&s.deadlines.Read, "read-timeout", httpx.DefaultReadDeadline, "how long a request's body may take to arrive; a slower one is cut off")
	fs.DurationVar(&s.deadlines.Write, "write-timeout", httpx.DefaultWriteDeadline, "how long an answer may take to be written")
	fs.DurationVar(&s.deadlines.Stream, "stream-timeout", httpx.DefaultStreamDeadline, "how long an event stream (MCP's GET) may stay open")
	s.maxConns = connBound{auto: true}
	fs.Var(&s.maxConns, "max-connections", "most connections open at once, `N` or auto (the open-file limit less a reserve of 1024, at most 16384); "+
		"past it new connections wait in the kernel's accept backlog; 0: no bound")
	fs.IntVar(&s.maxConnsPerAddr, "max-connections-per-address", httpx.DefaultMaxConnectionsPerAddress,
		"most connections open at once from one client address (IPv4, or IPv6 /64) as the listener sees it, a proxy's when behind one; "+
			"past it a connection is reset at once; 0: no bound")
	fs.DurationVar(&s.headerTimeout, "header-timeout", defaultHeaderTimeout, "how long a request's headers may take to arrive; a slower connection is closed")
	fs.DurationVar(&s.idleTimeout, "idle-timeout", defaultIdleTimeout, "how long a kept-alive connection may wait for its next request before it is closed")
}

// logger checks the flags and returns the command's logger, writing to w in
// the --log-format. A bad flag is a usage error naming the command cmd.
func (s *serverFlags) logger(cmd string, w io.Writer) (*slog.Logger, error) {
	if s.shutdownTimeout <= 0 {
		return nil, usagef("%s: --shutdown-timeout must be positive, got %s", cmd, s.shutdownTimeout)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"read-timeout", s.deadlines.Read}, {"write-timeout", s.deadlines.Write}, {"stream-timeout", s.deadlines.Stream},
		{"header-timeout", s.headerTimeout}, {"idle-timeout", s.idleTimeout}} {
		if d.v <= 0 {
			return nil, usagef("%s: --%s must be positive, got %s", cmd, d.flag, d.v)
		}
	}
	if s.maxConnsPerAddr < 0 {
		return nil, usagef("%s: --max-connections-per-address must be 0 (no bound) or more, got %d", cmd, s.maxConnsPerAddr)
	}
	return newLogger(cmd, w, s.logFormat)
}

// newLogger returns a logger writing to w in format, text or json.
func newLogger(cmd string, w io.Writer, format string) (*slog.Logger, error) {
	h, err := newLogHandler(cmd, w, format, slog.LevelInfo)
	if err != nil {
		return nil, err
	}
	return slog.New(h), nil
}

// newLogHandler returns a log handler writing the records of level and
// above to w in format, text or json.
func newLogHandler(cmd string, w io.Writer, format string, level slog.Leveler) (slog.Handler, error) {
	switch format {
	case "text":
		return slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}), nil
	case "json":
		return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}), nil
	}
	return nil, usagef("%s: --log-format must be text or json, got %q", cmd, format)
}

// serveHooks are what a command runs beside its HTTP server. Each may be nil.
type serveHooks struct {
	// start runs once the address is listened on, before the server serves
	// (the job queue of the oversight service). An error ends serve.
	start func() error
	// ready is called with the base URL ("http://127.0.0.1:8080") once the
	// server serves and its ready line is logged.
	ready func(base string)
	// stop runs after the server has shut down, within what is left of the
	// shutdown timeout (the job queue, letting running jobs finish).
	stop func(ctx context.Context) error
}

// isMCPStream tells the requests that open an MCP event stream (a GET of an
// MCP endpoint, at /mcp or below a path ending in /mcp, accepting
// text/event-stream), which get the stream deadline; no other route of a
// serving command streams.
func isMCPStream(r *http.Request) bool {
	return httpx.IsEventStream(r) && (r.URL.Path == "/mcp" || strings.HasSuffix(r.URL.Path, "/mcp"))
}

// serve is the lifecycle of every serving command. It listens on --addr (a
// usage error if it cannot), bounding the connections (--max-connections,
// --max-connections-per-address), runs hooks.start, serves h, logs msg with
// the url, attrs and the bounds, and calls hooks.ready. When ctx ends it
// logs "shutting down", lets requests in flight finish within
// --shutdown-timeout, runs hooks.stop and logs "stopped".
func (s *serverFlags) serve(ctx context.Context, log *slog.Logger, h http.Handler, hooks serveHooks, msg string, attrs ...slog.Attr) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return usagef("--addr: %v", err)
	}
	limits := httpx.ConnLimits{Total: s.maxConns.value(), PerAddress: s.maxConnsPerAddr, Logger: log}
	ln = limits.Listener(ln)
	if hooks.start != nil {
		if err := hooks.start(); err != nil {
			_ = ln.Close()
			return err
		}
	}
	// Each request's deadlines are set by route (MCP's event stream lasts
	// longer); the server's own are the defaults until the handler runs.
	deadlines := s.deadlines
	deadlines.IsStream = isMCPStream
	srv := &http.Server{
		Handler:           deadlines.Handler(h),
		ReadHeaderTimeout: cmp.Or(s.headerTimeout, defaultHeaderTimeout),
		ReadTimeout:       10*time.Second + s.deadlines.WithDefaults().Read,
		WriteTimeout:      10*time.Second + s.deadlines.WithDefaults().Write,
		IdleTimeout:       cmp.Or(s.idleTimeout, defaultIdleTimeout),
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	attrs = append([]slog.Attr{slog.String("url", base+"/")}, attrs...)
	log.LogAttrs(ctx, slog.LevelInfo, msg, append(attrs, slog.Int("max_connections", limits.Total),
		slog.Int("max_connections_per_address", limits.PerAddress))...)
	if hooks.ready != nil {
		hooks.ready(base)
	}
	stop := func(ctx context.Context) error {
		if hooks.stop == nil {
			return nil
		}
		return hooks.stop(ctx)
	}
	select {
	case err := <-errc: // the server failed on its own
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.shutdownTimeout)
		defer cancel()
		return errors.Join(err, stop(sctx))
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.shutdownTimeout)
	defer cancel()
	if err = srv.Shutdown(sctx); err != nil {
		err = fmt.Errorf("shutdown: %w", err)
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	err = errors.Join(err, stop(sctx))
	log.Info("stopped")
	return err
}
