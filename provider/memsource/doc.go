// Package memsource is an in-memory [provider.DataSource] and
// [provider.Writer], for tests, examples and demonstrations. It keeps every
// tenant's records in sorted slices guarded by one read-write mutex, so it is
// safe for concurrent use and fast enough for some tens of thousands of
// records; nothing is persisted.
//
// Records are deep-copied on the way in and on the way out: a caller can
// never change stored state through a record it passed or received.
// Timestamps are stored in UTC at millisecond precision, the precision served.
//
// Serving an in-memory store over HTTP:
//
//	src := memsource.New()
//	ctx := context.Background()
//	err := src.UpsertConversation(ctx, "acme", spec.Conversation{
//		ID:        "c-1",
//		StartedAt: spec.NewTime(time.Now()),
//		Model:     "gpt-x",
//	})
//	if err != nil {
//		return err
//	}
//	h, err := provider.NewHandler(src, provider.WithTokens(provider.Token{Secret: "s3cret", Tenant: "acme"}))
//	if err != nil {
//		return err
//	}
//	return http.ListenAndServe("localhost:8080", h)
//
// Usage buckets are aggregated on each call from the [provider.UsageRecord]
// values given to [Source.RecordUsage].
package memsource
