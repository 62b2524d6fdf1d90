// Package export writes the AI usage data interface as a scheduled export:
// sets of gzip-compressed NDJSON files in a directory, which a consumer
// reads instead of calling the REST interface (docs/export.md).
//
// An [Exporter] reads any provider.DataSource and writes one set per call
// of [Exporter.Write]:
//
//	x, err := export.New(src, export.Config{Dir: "/var/export/acme", Tenant: "acme"})
//	...
//	m, err := x.Write(ctx, export.Auto) // or export.Full, export.Increment
//
// Each set is a directory named by its id, holding one file per resource
// (conversations.ndjson.gz, assistants.ndjson.gz, events.ndjson.gz,
// usage.ndjson.gz) and a manifest.json naming each file with its record
// count and SHA-256. A line is one record, exactly the JSON the REST
// interface serves for it: deleted conversations are the same tombstones.
// A full set holds every record; an increment holds the conversations and
// assistants with updatedAt >= from and the events with occurredAt > from,
// from being a [Config.Overlap] before the creation of the previous set, so
// that a record the vendor committed late is exported again rather than
// missed. Usage is aggregated: every set carries the hourly buckets, grouped
// by all four dimensions, of a window (from [Config.UsageBackfill] ago for a
// full set; for an increment from [Config.UsageTrailing] ago or the hour of
// the previous set, whichever is earlier) up to the end of the current hour,
// and a reader takes each hour from the newest set covering it.
//
// Publishing is atomic: the files are written and synced, then the manifest
// is written to a temporary name, synced and renamed into place, and only
// then is index.json at the export's root rewritten (the same way) to list
// it. A reader trusts only sets whose manifest exists; a crash leaves at
// most a directory without a manifest, which the next write removes.
//
// [Exporter.Prune] removes sets older than a retention, never the latest
// full set and the increments after it. One Exporter, in one process,
// writes to a directory at a time.
package export
