// Package push sends a provider's records to a push receiver: the webhook
// transport of the AI usage data specification, beside or instead of REST.
//
// A [Pusher] reads the records that changed from a [provider.DataSource],
// since the watermarks it keeps in the vendor's database, and queues them as
// deliveries of at most [spec.MaxPushRecords] records and [MaxBodyBytes]
// bytes each: one resource per delivery, every record the JSON REST serves
// for it, the body of schema push-delivery. River works the queue on the same
// database (SQLite or PostgreSQL), so a delivery queued survives a restart. A
// delivery is signed per the Standard Webhooks specification (package
// [webhook]) and retried with exponential backoff and jitter until the
// receiver answers 2xx, or given up after [Config.MaxAttempts] attempts or at
// once when the receiver refuses its body for good (400, 410, 413 or 422).
//
// Delivery is at least once: a receiver may see a delivery twice (the same
// webhook-id) and deliveries out of order; it keeps per record the version
// with the latest time, so neither changes what it holds. A watermark
// advances only after the deliveries of the records before it are queued.
//
// Embedding it, scanning every minute until ctx ends:
//
//	p, err := push.New(ctx, push.Config{DatabaseURL: "sqlite:vendor.db", Source: src, Tenant: "acme",
//		URL: "https://collector.example/push/src_1", Secret: secret})
//	if err != nil {
//		return err
//	}
//	defer p.Close()
//	return p.Run(ctx, time.Minute)
//
// The package's example runs one scan against a receiver that checks the
// signatures ([Pusher.Scan], then [Pusher.Wait]).
//
// See docs/push.md for the format and the guarantees.
package push
