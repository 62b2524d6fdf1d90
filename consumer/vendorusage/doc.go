// Package vendorusage reads an organisation's API usage and costs from the
// administration APIs of OpenAI and Anthropic and serves them as usage
// buckets of the AI usage data interface: each vendor is a
// [consumer.Source] that [consumer.NewPoller] syncs into a store like any
// provider.
//
//	src, err := vendorusage.NewOpenAI(vendorusage.Config{Key: adminKey})
//	if err != nil { ... }
//	cfg := vendorusage.PollerConfig()
//	cfg.Source = "openai"
//	p, err := consumer.NewPoller(src, store, &cfg)
//
// A walk of one usage window reads the vendor's hourly usage, grouped by
// every dimension it has, summed into the interface's four dimensions
// (model; userId, the person's email from the vendor's users endpoint;
// assistantId, the API key; department, the project or workspace), then the
// vendor's daily costs of the days that start in the window, one bucket per
// day, project or workspace and model, at 00:00 UTC with the assistantId
// "openai-costs" or "anthropic-costs". Input tokens keep their kinds apart in
// the extra metrics [MetricUncachedInputTokens], [MetricCacheReadTokens] and
// [MetricCacheWriteTokens]; a cost bucket's cost is also its
// [MetricDailyCost], a cost per day and project, not per person or hour.
//
// Requests are bounded by a rate limiter ([Config.Rate]); a 429 waits for
// its retry-after, a 5xx or network error backs off exponentially, at most
// [Config.MaxAttempts] attempts. The Admin key goes to the vendor's origin
// only, and never into a log or an error. docs/consumer.md, "OpenAI and
// Anthropic usage", documents every field.
//
// Package vendortest holds local fakes of both APIs for tests.
package vendorusage
