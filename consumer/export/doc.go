// Package export is the consumer's transport for a scheduled export: a
// [consumer.Source] that reads the sets a provider publishes as
// gzip-compressed NDJSON files (written by provider/export, described in
// docs/export.md) from a directory or from an http(s) base address.
//
//	src, err := export.New(export.Config{URL: "https://vendor.example/exports/acme", Token: token})
//	...
//	poller, err := consumer.NewPoller(src, store, &consumer.Config{Source: "vendor"})
//
// # How the export maps onto a Source
//
// A Source answers pages of a resource for a query; an export holds sets.
// The mapping:
//
//   - A walk (a Fetch without cursor) reads index.json and builds the chain:
//     the latest full set whose manifest can be read, then each increment
//     that follows it (sequence one more, previous naming the set before),
//     up to the latest set. A missing or unreadable increment ends the
//     chain there: the walk falls back to the latest full set and the
//     increments before the gap, and the gap is logged. A consumer then
//     stays at that state, never past a hole, until the provider writes
//     its next full set, from which it reads on.
//   - updatedSince (occurredAfter for events), which the poller derives from
//     its checkpoint's watermark, selects the sets to read: a set whose
//     window ends (to) before it holds nothing newer and is skipped. Within
//     the sets read, records are filtered by the same rule as the REST
//     interface applies. A full walk (no filter) reads the whole chain, so
//     the poller's sweep of what a full walk did not see is sound.
//   - The cursor is the list of the walk's set ids, the position in it and
//     the line offset within that set's file of the resource: a restart
//     resumes from the checkpoint at the same line of the same file. A
//     cursor naming a set that was pruned since is rejected as
//     provider.ErrInvalid, and the poller starts the walk over.
//   - Usage: each set's usage file holds every hourly bucket, grouped by all
//     four dimensions, of its window. A window asked for is answered hour by
//     hour from the newest set of the chain covering that hour, so the
//     poller's sweep of a window replaces what a newer set re-exported.
//     Another granularity or grouping than the export's is provider.ErrInvalid.
//
// Every file is checked against its manifest before any of its lines is
// returned: size, SHA-256 of the compressed bytes, gzip and line count. A
// file that fails is an error naming it ([ErrCorrupt]), and none of its
// records is applied; over HTTP it is downloaded again first, within the
// retries. The same file is never applied twice within a walk, and a
// record re-read by a later walk (the set overlapping the watermark) is
// upserted by id, keeping the newer updatedAt: nothing is stored twice.
//
// Verified files are kept in memory, decompressed, up to
// [Config.CacheBytes], so that the pages of one walk read each file once.
//
// # Bounds
//
// A reader trusts no provider with its memory. The manifest names each
// file's compressed size, which is checked against [Config.MaxFileBytes]
// before the file is read, and no more bytes than it names are ever read;
// index.json and each manifest are at most [MaxMetaBytes]. The manifest
// names no decompressed size, so decompression stops, with [ErrTooLarge],
// at a line past [Config.MaxLineBytes] or a file past the smaller of
// [Config.MaxPlainBytes] and its record count times the line bound: a
// compression bomb costs at most those bounds, and is not downloaded
// again. A directory export is read through os.OpenRoot, confined to
// [Config.Root] (or to the export's directory itself).
package export
