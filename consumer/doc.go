// Package consumer is the service's side of the AI usage data interface: it
// polls providers and keeps one faithful copy of what they hold.
//
// A [Source] is a transport to one provider; [Client] is the REST one (with
// retries, backoff, Retry-After and problem bodies mapped back to the error
// kinds of package provider); consumer/export reads a provider's scheduled
// export instead. A [Store] keeps the records, checkpoints and
// leases; consumer/sqlstore implements it on SQLite and PostgreSQL, and also
// serves the collected records as a provider.DataSource.
//
// A [Poller] syncs one source into a store:
//
//	client, err := consumer.NewClient(consumer.ClientConfig{URL: "https://vendor.example/ai-usage", Token: token})
//	...
//	store, err := sqlstore.Open(ctx, "sqlite:consumer.db")
//	...
//	poller, err := consumer.NewPoller(client, store, &consumer.Config{Source: "vendor"})
//	...
//	res, err := poller.SyncOnce(ctx) // or poller.Run(ctx, 5*time.Minute, nil)
//
// For each resource the poller walks the provider's cursors; every page's
// records commit in one transaction with the checkpoint (the cursor of the
// next page and the watermark), so a crash repeats at most one page and
// loses nothing. Once a watermark exists, walks ask only for what changed
// since it, minus [Config.Lookback]; records are upserted by id, keeping the
// newer updatedAt. Usage re-pulls a trailing window and replaces its
// buckets. Where the provider lacks a sync feature (no cursor pagination, no
// updatedAt, a filter ignored) the poller notices it from the answers and
// re-pulls everything each time, marking what a complete re-pull no longer
// returns as missing. Records are kept exactly as received, unknown members
// and enum values included; a record that fails its schema is quarantined
// with the reason.
//
// A lease per source and resource, held in the store, keeps several pollers
// sharing one PostgreSQL store from syncing the same thing at once, so the
// work spreads over processes and machines.
//
// Records a provider pushes (the webhook transport, docs/push.md) enter the
// same store through [SavePushed]: validated and quarantined as a page is,
// upserted by the same rules, under the same lease, without moving the
// poller's checkpoint; a poller's walk of the same source reconciles what
// pushes missed.
package consumer
