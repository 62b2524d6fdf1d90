package otlpwire_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"

	"github.com/aiusage/kit/internal/app/telemetry/otlpwire"
	"github.com/aiusage/kit/spec"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Example_handler serves the three OTLP/HTTP paths with an ingest function
// that counts log records, and posts one OTLP/JSON request to it.
func Example_handler() {
	mux := http.NewServeMux()
	for _, s := range []otlpwire.Signal{otlpwire.Metrics, otlpwire.Logs, otlpwire.Traces} {
		h, err := otlpwire.Handler(s, otlpwire.Config{
			Ingest: func(_ context.Context, req proto.Message) (otlpwire.Partial, error) {
				if logs, ok := req.(*collogs.ExportLogsServiceRequest); ok {
					n := 0
					for _, rl := range logs.ResourceLogs {
						for _, sl := range rl.ScopeLogs {
							n += len(sl.LogRecords)
						}
					}
					fmt.Println("log records:", n)
				}
				return otlpwire.Partial{}, nil
			},
		})
		if err != nil {
			log.Fatal(err)
		}
		mux.Handle(s.Path(), h) // behind the authentication in a real service
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()

	body := `{"resourceLogs":[{"scopeLogs":[{"logRecords":[
		{"timeUnixNano":"1764300000000000000","body":{"stringValue":"hello"},"traceId":"5b8efff798038103d269b633813fc60c"}]}]}]}`
	resp, err := http.Post(srv.URL+"/v1/logs", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var answer bytes.Buffer
	_, _ = answer.ReadFrom(resp.Body)
	fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"), answer.String())
	// Output:
	// log records: 1
	// 200 application/json {}
}

// Example_grpc serves the three OTLP/gRPC services with an authenticate
// function that takes one key and an ingest function that counts log
// records, and exports one request with the generated client.
func Example_grpc() {
	s := grpc.NewServer(otlpwire.GRPCMaxRecvMsgSize(0))
	err := otlpwire.RegisterGRPC(s, otlpwire.GRPCConfig{
		Authenticate: func(ctx context.Context, key string) (context.Context, error) {
			if key != "ik_example" {
				return nil, spec.Errorf(spec.ErrUnauthorized, "unknown key")
			}
			return ctx, nil // a real service carries the key's principal
		},
		Ingest: func(_ context.Context, req proto.Message) (otlpwire.Partial, error) {
			if logs, ok := req.(*collogs.ExportLogsServiceRequest); ok {
				fmt.Println("resource logs:", len(logs.ResourceLogs))
			}
			return otlpwire.Partial{}, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = s.Serve(lis) }()
	defer s.Stop()

	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	client := collogs.NewLogsServiceClient(cc)
	req := &collogs.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{}}}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer ik_example")
	resp, err := client.Export(ctx, req)
	fmt.Println(resp.GetPartialSuccess() == nil, err)
	_, err = client.Export(context.Background(), req)
	fmt.Println(status.Code(err))
	// Output:
	// resource logs: 1
	// true <nil>
	// Unauthenticated
}
