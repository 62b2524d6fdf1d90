package cli

import (
	"context"
	"flag"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/aiusage/kit/internal/app/server"
)

// otlpGRPCFlags is the --otlp-grpc-addr flag: OTLP over gRPC on a listener
// of its own, beside OTLP over HTTP at /v1/{metrics,logs,traces} on the
// service's address.
type otlpGRPCFlags struct {
	addr string
	// endpoint is where serve serves OTLP/gRPC (http://host:port), once it
	// does.
	endpoint string
}

func (o *otlpGRPCFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.addr, "otlp-grpc-addr", "", "`ADDR` of a listener serving OTLP over gRPC to AI tools with Ingestion keys (host:port, conventionally :4317; default: none, OTLP over HTTP only, at /v1/... on the main address)")
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
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return nil, usagef("%s: --otlp-grpc-addr: %v", cmd, err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := gs.Serve(ln); err != nil {
			log.Error("otlp grpc listener", "error", err)
		}
	})
	o.endpoint = "http://" + ln.Addr().String()
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
