// Package sqlstore is the [consumer.Store] of the kit on SQLite or
// PostgreSQL: it keeps the records a consumer collects, its checkpoints,
// leases and quarantine. The same [Store] is also the collected view: a
// [provider.DataSource], [provider.RawSource] and [provider.RawGetter] whose
// tenants are the source names, so that what was collected from a provider
// can be served again, as received, through [provider.NewHandler].
//
// [Open] opens a database from a URL and owns it; [New] works on a
// *sql.DB of yours, possibly the one provider/sqlsource uses (every table
// here is prefixed consumer_). Either applies the package's migrations.
// Give the Store to [consumer.NewPoller]; serve it with
// [provider.NewHandler] (see the examples).
//
// [Store.SavePage] and [Store.EndRun] (which commits the walk's last page
// with its sweep and checkpoint) each run in one transaction that first
// checks and extends the lease, then writes: a page and its checkpoint are
// stored together or not at all. A record is never replaced by an older
// version (by its Time). [WithAsyncCommit] trades the last commits on a
// crash of PostgreSQL for speed, never consistency.
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
// own Time, and with includeMissing the Missing ones too. Lists are keyset
// pages: a page costs the same at any depth, and one with a byte budget
// (the query's MaxBytes) costs about the budget.
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
// different sources sharing an id and a time keep one order across pages.
// Its usage sums the sources' buckets. It has no single records, ids being
// unique only within a source.
//
// For dashboards, [Store.UsageSeries] sums the usage of several sources by
// hour or day, grouped by source and any of the four dimensions, with the
// cost where the buckets reported one; [Store.SearchConversations] finds
// the live conversations of several sources by user, assistant and
// startedAt range, newest first, in keyset pages.
//
// The tables and indexes are described in the kit's docs/design.md,
// section Storage.
package sqlstore
