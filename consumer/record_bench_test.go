package consumer

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
)

// BenchmarkParseRecord checks and indexes one realistic conversation, the
// consumer's per-record cost beside the store.
func BenchmarkParseRecord(b *testing.B) {
	src := memsource.New()
	ctx := context.Background()
	if err := demodata.Fill(ctx, demodata.Config{Seed: 1, Conversations: 200, Tenant: "t", End: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}, "t", src); err != nil {
		b.Fatal(err)
	}
	page, err := src.ListConversations(ctx, provider.ConversationQuery{Tenant: "t", Limit: 200})
	if err != nil {
		b.Fatal(err)
	}
	var raws []json.RawMessage
	size := 0
	for _, c := range page.Items {
		raw, _ := json.Marshal(c)
		raws = append(raws, raw)
		size += len(raw)
	}
	b.SetBytes(int64(size / len(raws)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if p := parseRecord(Conversations, raws[i%len(raws)]); p.reason != "" {
			b.Fatal(p.reason)
		}
	}
}
