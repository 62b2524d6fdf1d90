package memsource_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

// A Source is filled through its Writer methods and read through the
// DataSource methods, which is what provider.NewHandler serves.
func Example() {
	ctx := context.Background()
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	src := memsource.New()

	for i, id := range []string{"c-2", "c-1", "c-3"} {
		c := spec.Conversation{
			ID:        id,
			StartedAt: spec.NewTime(day.Add(time.Duration(i) * time.Hour)),
			UpdatedAt: spec.NewTime(day.Add(9 * time.Hour)), // one updatedAt: ordered by id
			Model:     "model-a",
		}
		if err := src.UpsertConversation(ctx, "acme", c); err != nil {
			fmt.Println(err)
			return
		}
		u := provider.UsageRecord{ID: "req-" + id, At: day.Add(time.Duration(i) * time.Hour), ConversationID: id, UserID: "u1", Model: "model-a", InputTokens: 100, OutputTokens: 20, Cost: 0.01}
		if err := src.RecordUsage(ctx, "acme", u); err != nil {
			fmt.Println(err)
			return
		}
	}
	if err := src.DeleteConversation(ctx, "acme", "c-1", day.Add(10*time.Hour)); err != nil {
		fmt.Println(err)
		return
	}

	// Two pages of conversations: the second starts after the last key of
	// the first.
	page, _ := src.ListConversations(ctx, provider.ConversationQuery{Tenant: "acme", Limit: 2})
	for _, c := range page.Items {
		fmt.Println(c.ID, c.UpdatedAt)
	}
	last := provider.ConversationKey(&page.Items[len(page.Items)-1])
	page, _ = src.ListConversations(ctx, provider.ConversationQuery{Tenant: "acme", After: &last, Limit: 2})
	for _, c := range page.Items {
		fmt.Println(c.ID, c.UpdatedAt, "deleted:", c.Deleted())
	}

	usage, _ := src.Usage(ctx, provider.UsageQuery{
		Tenant: "acme", Start: day, End: day.AddDate(0, 0, 1),
		Granularity: spec.GranularityDay, GroupBy: []string{spec.DimensionModel}, Limit: 10,
	})
	for _, b := range usage.Items {
		m := b.Metrics
		fmt.Println(b.StartAt, *b.Dimensions.Model, m.Requests, m.Conversations, m.ActiveUsers, m.InputTokens, m.OutputTokens)
	}
	// Output:
	// c-2 2026-03-01T09:00:00.000Z
	// c-3 2026-03-01T09:00:00.000Z
	// c-1 2026-03-01T10:00:00.000Z deleted: true
	// 2026-03-01T00:00:00.000Z model-a 3 3 1 300 60
}
