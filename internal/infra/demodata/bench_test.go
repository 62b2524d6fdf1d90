package demodata_test

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/spec"
)

const benchConversations = 100_000

// BenchmarkGenerate100k builds 100,000 conversations and everything that goes
// with them in memory. B/op is everything allocated; live-MB is the heap the
// Dataset keeps.
func BenchmarkGenerate100k(b *testing.B) {
	cfg := demodata.Config{Seed: 1, Conversations: benchConversations}
	var live uint64
	for b.Loop() {
		d, err := demodata.Generate(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		live = ms.HeapAlloc
		runtime.KeepAlive(d)
		b.StartTimer()
	}
	b.ReportMetric(float64(live)/(1<<20), "live-MB")
}

// BenchmarkStream100k streams the same records without keeping them, as Fill
// does when loading a database; the heap it keeps is a few bytes per
// conversation.
func BenchmarkStream100k(b *testing.B) {
	cfg := demodata.Config{Seed: 1, Conversations: benchConversations}
	var peak uint64
	for b.Loop() {
		n := 0
		err := demodata.Stream(cfg, func(rec any) error {
			n++
			if n%50_000 == 0 {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "heap-inuse-MB")
}

// BenchmarkStreamJSON100k also encodes every conversation, as a database
// loader keeping canonical JSON does, and reports the average size.
func BenchmarkStreamJSON100k(b *testing.B) {
	cfg := demodata.Config{Seed: 1, Conversations: benchConversations}
	var bytes, convs int
	for b.Loop() {
		bytes, convs = 0, 0
		err := demodata.Stream(cfg, func(rec any) error {
			if c, ok := rec.(spec.Conversation); ok {
				j, err := json.Marshal(c)
				if err != nil {
					return err
				}
				bytes += len(j)
				convs++
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(bytes)/float64(convs), "JSON-B/conversation")
}
