// Package sqlstore is the [consumer.Store] of the kit on SQLite or
// PostgreSQL: it keeps the records a consumer collects, its checkpoints,
// leases and quarantine. The same [Store] is also the collected view: a
// [provider.DataSource], [provider.RawSource] and [provider.RawGetter] whose
// tenants are the source names, so that what was collected from a provider
// can be served again, as received, through [provider.NewHandler].
//
// # Usage
//
//	store, err := sqlstore.Open(ctx, "sqlite:/var/lib/aiusage/consumer.db") // applies the migrations
//	if err != nil {
//		return err
//	}
//	defer store.Close() // and the database
//
// or over a *sql.DB of yours, which you close after the Store (see [New] for
// the drivers and SQLite settings it expects), possibly the one
// provider/sqlsource uses: every table here is prefixed consumer_.
//
//	store, err := sqlstore.New(ctx, db.DB, sqlstore.Dialect(db.Dialect), sqlstore.Postgres) // applies the migrations
//
// then:
//
//	poller, err := consumer.NewPoller(source, store, &consumer.Config{...})
//
//	// Serve what was collected from source "acme" (tenant = source name):
//	h, err := provider.NewHandler(store, provider.WithTokens(provider.Token{Secret: s, Tenant: "acme"}))
//
// # Storage
//
// consumer_records holds one row per record of every source and resource,
// keyed by (source, resource, id), with the JSON exactly as received in
// body, the indexed fields beside it (times as milliseconds since the Unix
// epoch; ids byte-ordered: SQLite's BINARY collation, COLLATE "C" on
// PostgreSQL), the run that last saw it and, for records a complete full
// re-pull no longer found, the Missing time. Usage buckets keep their key
// and metrics in columns for aggregation. Pages of the collected view are
// keyset queries on (source, resource, pos_ms, id), where pos_ms is the
// record's Time except for conversations marked Missing, or that came back
// since (below); a page with a byte budget (the list query's MaxBytes, the
// page cap of [provider.Handler]) reads the rows' byte lengths and only
// the bodies of at most budget/(limit+1) bytes, and, when a body it left
// out fits, reads the page again adding the lengths up and reading only
// the bodies that fit, so it never reads limit whole records; usage buckets have a partial index in [provider.UsageKey]
// order. The sweep of a usage window reads one range of either index.
// Conversations keep their user.id and assistant.id in the columns of
// those dimensions (up to 256 bytes), and live conversations (neither
// tombstones nor Missing) have three small partial indexes by (source,
// started_ms, id), with user_id or assistant_id after the source, for
// [Store.SearchConversations]; usage buckets record whether they carried a
// cost (has_cost), for [Store.UsageSeries].
// consumer_checkpoints, consumer_leases and consumer_quarantine hold the
// rest, one row per (source, resource) or per quarantined record.
// [Store.Status] counts with index ranges (the Missing records have a small
// partial index of their own).
//
// [Store.SavePage] and [Store.EndRun] (which commits the walk's last page
// with its sweep and checkpoint) run in one transaction that first checks
// and extends the lease (an UPDATE of the lease row, which also locks it
// until the commit), then writes. Records are upserted with
// INSERT ... ON CONFLICT statements that keep a stored record whose Time is
// newer: on PostgreSQL one statement per page, its columns passed as
// arrays; on SQLite multi-row statements of a few records. Writing the
// records' bytes costs most of a page (the WAL, its checkpoints and the
// commit's sync): on SQLite, "sqlite:PATH?_pragma=synchronous(NORMAL)"
// saves the sync at each commit, on PostgreSQL [WithAsyncCommit], both at
// the price of the last commits on a crash (never consistency: a page and
// its checkpoint are lost together, and fetched again).
//
// # The collected view
//
// Records are served as received. Quarantined records are not served (a
// stored valid version of the same id still is). Assistants, events and
// usage buckets marked Missing are left out. A conversation marked Missing
// is served as a tombstone {id, conversationId, startedAt, updatedAt,
// deletedAt} with updatedAt and deletedAt the Missing time, and listed at
// that time; one that already was a tombstone is served unchanged. Should
// it reappear, it is served again as received, but it never moves back in
// the list, where readers poll with updatedSince: when its updatedAt is
// older than its Missing time, it stays listed there, and is served with
// that time as updatedAt (the only member changed), until a newer version
// comes. [Store.Export] writes records as received, in the order of their
// own Time, and with includeMissing the Missing ones too.
//
// [Store.Usage] aggregates the stored buckets, which are already
// aggregates, so two metrics are approximations when buckets are combined:
//
//   - Day buckets come from the day buckets the source stored for that day,
//     or, for a day without any, from the sum of its hour buckets (UTC
//     days). Hour buckets come from hour buckets only.
//   - Requests, tokens and cost are exact sums (cost rounded with
//     [provider.RoundCost]) up to 2^53. Every metric, stored or served,
//     lies in [0, 2^53]: a negative stored metric counts as 0, and a sum
//     saturates at 2^53, so that no stored value fails a query or wraps
//     around.
//   - Conversations is the sum of the stored buckets' counts: a conversation
//     spanning several stored buckets (hours, or groups) counts once in
//     each.
//   - ActiveUsers is exact when the stored buckets were grouped by userId:
//     it is then the number of distinct non-empty userId values among the
//     combined buckets that have requests. Buckets not grouped by userId
//     add their activeUsers, which over-counts a user active in several of
//     them.
//
// The store assumes one grouping per granularity and source; buckets of
// two groupings covering the same hour would both be counted.
//
// # Several sources as one
//
// [Store.Merged] serves several sources as one tenant (the oversight
// service's view of an organisation): the union of their lists, each record
// with a "sourceId" member, in (time, id, source) order, so that records of
// different sources sharing an id and a time keep one order across pages; a
// page merges one keyset range per source. Its usage sums the sources'
// buckets. It has no single records, ids being unique only within a
// source.
//
// For dashboards, [Store.UsageSeries] sums the usage of several sources by
// hour or day, grouped by source and any of the four dimensions, with the
// cost where the buckets reported one; [Store.SearchConversations] finds
// the live conversations of several sources by user, assistant and
// startedAt range, newest first, in keyset pages.
package sqlstore
