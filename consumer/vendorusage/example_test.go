package vendorusage_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/vendorusage"
	"github.com/aiusage/kit/consumer/vendorusage/vendortest"
)

// An OpenAI organisation's usage of one hour, read through the source (here
// from the local fake of the API): one bucket per model, person, API key
// and project, the person an email from the users list.
func Example() {
	f := vendortest.NewOpenAI()
	defer f.Close()
	h := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	f.AddUser("user_abc", "Ann@Example.com")
	f.AddUsage(vendortest.Usage{Hour: h, Model: "gpt-4o", User: "user_abc", APIKey: "key_1", Project: "proj_1",
		Requests: 3, Uncached: 200, CacheRead: 800, Output: 150})

	src, err := vendorusage.NewOpenAI(vendorusage.Config{BaseURL: f.URL, Key: f.Key})
	if err != nil {
		panic(err)
	}
	page, err := src.Fetch(context.Background(), consumer.Usage, consumer.Query{StartAt: h, EndAt: h.Add(time.Hour)})
	if err != nil {
		panic(err)
	}
	for _, r := range page.Records {
		fmt.Println(string(r))
	}
	// Output:
	// {"dimensions":{"assistantId":"openai-api-key:key_1","department":"openai-project:proj_1","model":"gpt-4o","userId":"ann@example.com"},"endAt":"2026-03-01T10:00:00Z","granularity":"hour","metrics":{"cacheReadTokens":800,"cacheWriteTokens":0,"inputTokens":1000,"outputTokens":150,"requests":3,"uncachedInputTokens":200},"startAt":"2026-03-01T09:00:00Z"}
}
