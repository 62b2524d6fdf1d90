package cli

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/aiusage/kit/internal/app/server"
)

// otlpGRPCFlags is the --otlp-grpc-addr flag: OTLP over gRPC on a listener
// of its own, beside OTLP over HTTP at /v1/{metrics,logs,traces} on the
// service's address.
type otlpGRPCFlags struct {
	addr string
	// fallback lets serve listen on a free port of addr's host when addr's
	// port is taken: the demo's, when the address is its default, not one
	// the user chose.
	fallback bool
	// endpoint is where serve serves OTLP/gRPC (http://host:port), once it
	// does; taken is the address it could not listen on when it fell back.
	endpoint, taken string
}

// demoOTLPGRPCAddr is the demo's default --otlp-grpc-addr: the OTLP/gRPC
// standard port, on loopback as the demo's main address.
const demoOTLPGRPCAddr = "127.0.0.1:4317"

// register registers --otlp-grpc-addr: off by default (service serve), or
// on at the standard port (demo).
func (o *otlpGRPCFlags) register(fs *flag.FlagSet, demo bool) {
	if demo {
		fs.StringVar(&o.addr, "otlp-grpc-addr", demoOTLPGRPCAddr, "`ADDR` of a listener serving OTLP over gRPC to AI tools with Ingestion keys (host:port; empty for none); when the default's port is taken, a free port is used and printed")
		return
	}
	fs.StringVar(&o.addr, "otlp-grpc-addr", "", "`ADDR` of a listener serving OTLP over gRPC to AI tools with Ingestion keys (host:port, conventionally :4317; default: none, OTLP over HTTP only, at /v1/... on the main address)")
}

// defaulted sets fallback when --otlp-grpc-addr is neither on the command
// line nor in the environment of fs, parsed.
func (o *otlpGRPCFlags) defaulted(fs *flag.FlagSet) {
	o.fallback = true
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "otlp-grpc-addr" {
			o.fallback = false
		}
	})
}

// serve starts, with --otlp-grpc-addr, the OTLP/gRPC server of srv's
// telemetry endpoint and returns the function that stops it, letting the
// requests in flight finish. An address that cannot be listened on is a
// usage error.
func (o *otlpGRPCFlags) serve(ctx context.Context, cmd string, log *slog.Logger, srv *server.Server) (stop func(), _ error) {
	if o.addr == "" {
		return func() {}, nil
	}
	gs, err := srv.Telemetry().NewGRPCServer()
	if err != nil {
		return nil, err
	}
	ln, err := o.listen(ctx, cmd, log)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := gs.Serve(ln); err != nil {
			log.Error("otlp grpc listener", "error", err)
		}
	})
	log.LogAttrs(ctx, slog.LevelInfo, "otlp grpc serving", slog.String("endpoint", o.endpoint))
	return func() {
		done := make(chan struct{})
		go func() { gs.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			gs.Stop()
		}
		wg.Wait()
	}, nil
}

// listen listens on --otlp-grpc-addr and sets o.endpoint. With fallback,
// an address whose port is taken gives way to a free port of the same
// host, and o.taken names it. Any other failure is a usage error naming
// the flag.
func (o *otlpGRPCFlags) listen(ctx context.Context, cmd string, log *slog.Logger) (net.Listener, error) {
	ln, err := net.Listen("tcp", o.addr)
	if err != nil && o.fallback && errors.Is(err, syscall.EADDRINUSE) {
		host, _, _ := net.SplitHostPort(o.addr)
		if ln, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err == nil {
			o.taken = o.addr
			log.LogAttrs(ctx, slog.LevelWarn, "otlp grpc: the default address is taken, serving on a free port instead",
				slog.String("taken", o.addr), slog.String("addr", ln.Addr().String()))
		}
	}
	if err != nil {
		return nil, usagef("%s: --otlp-grpc-addr: %v", cmd, err)
	}
	o.endpoint = "http://" + ln.Addr().String()
	return ln, nil
}
