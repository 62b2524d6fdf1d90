package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/provider/export"
	"github.com/aiusage/kit/provider/sqlsource"
	"github.com/aiusage/kit/spec"
)

type providerExportFlags struct {
	databaseURL, out, tenant, kind string
	every, fullEvery, keep         time.Duration
}

func providerExportCommand() *command {
	f := &providerExportFlags{}
	return &command{
		name:    "export",
		summary: "write the AI usage data interface as a scheduled export of NDJSON files",
		long: `Writes the data of --tenant in the kit's tables as an export set into --out: one
gzip-compressed NDJSON file per resource (conversations, assistants, events,
usage), each line a record exactly as the REST interface serves it, and a
manifest naming each file with its record count and SHA-256. index.json at the
root of --out lists the sets, so that --out can be served over HTTP as it is
(docs/export.md).

The first set is full; later ones are increments (what changed since the
previous set) until the latest full set is --full-every old. --kind full or
increment forces one. A set is published atomically: files first, then its
manifest, renamed into place; a reader never sees half a set.

Without --every, writes one set and exits. With --every, writes a set every
DURATION until SIGINT or SIGTERM. With --keep, sets older than DURATION are
removed after each write, never the latest full set and the increments after
it. Prints one line per set: its id, kind and record counts.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.databaseURL, "database-url", "sqlite:aiusage-provider.db", "database `URL`: sqlite:PATH or postgres://...")
			fs.StringVar(&f.out, "out", "", "`DIR` of the export (required; created when missing)")
			fs.StringVar(&f.tenant, "tenant", "default", "`NAME` of the tenant whose data is exported")
			fs.StringVar(&f.kind, "kind", "auto", "`KIND` of set: auto (full when due, else increment), full or increment")
			fs.DurationVar(&f.every, "every", 0, "write a set every `DURATION` until stopped; 0 writes one set")
			fs.DurationVar(&f.fullEvery, "full-every", 24*time.Hour, "write a full set when the latest is this old (`DURATION`)")
			fs.DurationVar(&f.keep, "keep", 0, "remove sets older than `DURATION` after each write (never the latest full set and those after it); 0 keeps all")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			return providerExport(ctx, e, f)
		},
	}
}

func providerExport(ctx context.Context, e *env, f *providerExportFlags) error {
	if strings.TrimSpace(f.out) == "" {
		return usagef("%s: --out is required", e.cmd)
	}
	if f.tenant == "" {
		return usagef("%s: --tenant must not be empty", e.cmd)
	}
	kinds := map[string]export.Kind{"auto": export.Auto, "full": export.Full, "increment": export.Increment}
	kind, ok := kinds[f.kind]
	if !ok {
		return usagef("%s: --kind must be auto, full or increment, got %q", e.cmd, f.kind)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"every", f.every}, {"keep", f.keep}} {
		if d.v < 0 {
			return usagef("%s: --%s must not be negative, got %s", e.cmd, d.name, d.v)
		}
	}
	if f.fullEvery <= 0 {
		return usagef("%s: --full-every must be positive, got %s", e.cmd, f.fullEvery)
	}
	if f.every > 0 && kind != export.Auto {
		return usagef("%s: --kind %s writes one set; with --every the kind is auto", e.cmd, f.kind)
	}
	db, err := sqldb.Open(ctx, f.databaseURL)
	if err != nil {
		return usagef("%s: --database-url: %v", e.cmd, err)
	}
	defer db.Close()
	src, err := sqlsource.New(ctx, db.DB, sqlsource.Dialect(db.Dialect))
	if err != nil {
		return err
	}
	x, err := export.New(src, export.Config{Dir: f.out, Tenant: f.tenant, FullEvery: f.fullEvery})
	if err != nil {
		return usagef("%s: %v", e.cmd, strings.TrimPrefix(err.Error(), "export: "))
	}
	report := func(m spec.ExportManifest, pruned []string, err error) {
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", e.cmd, err)
			return
		}
		var counts []string
		for _, file := range m.Files {
			counts = append(counts, fmt.Sprintf("%d %s", file.Records, file.Resource))
		}
		fmt.Fprintf(e.stdout, "set %s (%s): %s\n", m.ID, m.Kind, strings.Join(counts, ", "))
		if len(pruned) > 0 {
			fmt.Fprintf(e.stdout, "pruned %d set(s): %s\n", len(pruned), strings.Join(pruned, ", "))
		}
	}
	if f.every > 0 {
		return x.Run(ctx, f.every, f.keep, report)
	}
	m, err := x.Write(ctx, kind)
	var pruned []string
	if err == nil && f.keep > 0 {
		pruned, err = x.Prune(f.keep)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintf(e.stderr, "%s: interrupted; the set was not published\n", e.cmd)
		}
		report(m, nil, err)
		return &exitError{code: ExitFailure}
	}
	report(m, pruned, nil)
	return nil
}
