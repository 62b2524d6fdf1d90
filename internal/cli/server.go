package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
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
	}{{"read-timeout", s.deadlines.Read}, {"write-timeout", s.deadlines.Write}, {"stream-timeout", s.deadlines.Stream}} {
		if d.v <= 0 {
			return nil, usagef("%s: --%s must be positive, got %s", cmd, d.flag, d.v)
		}
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
// usage error if it cannot), runs hooks.start, serves h, logs msg with the
// url and attrs, and calls hooks.ready. When ctx ends it logs "shutting
// down", lets requests in flight finish within --shutdown-timeout, runs
// hooks.stop and logs "stopped".
func (s *serverFlags) serve(ctx context.Context, log *slog.Logger, h http.Handler, hooks serveHooks, msg string, attrs ...slog.Attr) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return usagef("--addr: %v", err)
	}
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
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10*time.Second + s.deadlines.WithDefaults().Read,
		WriteTimeout:      10*time.Second + s.deadlines.WithDefaults().Write,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	log.LogAttrs(ctx, slog.LevelInfo, msg, append([]slog.Attr{slog.String("url", base+"/")}, attrs...)...)
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
