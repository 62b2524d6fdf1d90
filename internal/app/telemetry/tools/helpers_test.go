package tools_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/aiusage/kit/internal/app/telemetry/tools"
)

// load decodes the OTLP/JSON fixture testdata/name into m.
func load[M proto.Message](t testing.TB, name string, m M) M {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	require.NoError(t, protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, m))
	return m
}

func logsOf(t *testing.T, name string) tools.Batch {
	t.Helper()
	return tools.Logs(load(t, name, &collogspb.ExportLogsServiceRequest{}))
}

func metricsOf(t *testing.T, name string) tools.Batch {
	t.Helper()
	return tools.Metrics(load(t, name, &colmetricspb.ExportMetricsServiceRequest{}))
}

func tracesOf(t *testing.T, name string) tools.Batch {
	t.Helper()
	return tools.Traces(load(t, name, &coltracepb.ExportTraceServiceRequest{}))
}

// store plays a store: it keeps one usage per key in arrival order, applies
// the one-source rule and turns cumulative points into deltas.
type store struct {
	keys map[string]bool
	us   []tools.Usage
}

func (s *store) add(batches ...tools.Batch) {
	if s.keys == nil {
		s.keys = map[string]bool{}
	}
	for _, b := range batches {
		for _, u := range b.Usage {
			if !s.keys[u.Key] {
				s.keys[u.Key] = true
				s.us = append(s.us, u)
			}
		}
	}
}

// bucket is what usage is totalled by: tool, model, person and hour.
type bucket struct {
	Tool, Model, Email, Hour string
}

type total struct {
	Tokens tools.Tokens
	Cost   float64
}

func (s *store) totals() map[bucket]total {
	out := map[bucket]total{}
	for _, u := range tools.NewAccumulator().Apply(tools.Dedup(s.us)) {
		b := bucket{u.Tool, u.Model, u.Email, u.Time.Truncate(3600e9).Format("2006-01-02T15")}
		tt := out[b]
		tt.Tokens = tt.Tokens.Add(u.Tokens)
		if u.CostEstimate != nil {
			tt.Cost += *u.CostEstimate
		}
		out[b] = tt
	}
	return out
}

// roundCosts rounds the costs to micro-dollars, for exact comparison.
func roundCosts(m map[bucket]total) map[bucket]total {
	for k, v := range m {
		v.Cost = float64(int64(v.Cost*1e6+0.5)) / 1e6
		m[k] = v
	}
	return m
}

// keys returns the keys of the usage and events of b (a prompt shares its
// event's key).
func keys(b tools.Batch) []string {
	var out []string
	for _, u := range b.Usage {
		out = append(out, u.Key)
	}
	for _, e := range b.Events {
		out = append(out, e.ID)
	}
	return out
}
