package otlpwire_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/aiusage/kit/internal/app/telemetry/otlpwire"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
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
