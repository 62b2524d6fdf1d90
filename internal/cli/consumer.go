package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/aiusage/kit/consumer"
	cexport "github.com/aiusage/kit/consumer/export"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/consumer/vendorusage"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/mcp"
	"github.com/aiusage/kit/spec"
)

const defaultConsumerDB = "sqlite:aiusage-consumer.db"

func consumerCommand() *command {
	return &command{
		name:    "consumer",
		summary: "sync providers of the AI usage data interface into one store, and read it",
		subs:    []*command{consumerSyncCommand(), consumerStatusCommand(), consumerExportCommand(), consumerQuarantineCommand()},
	}
}

type syncFlags struct {
	exportMaxFileMiB                                  int64 // --export-max-file-mib
	vendor                                            vendorFlags
	databaseURL, source, url, token, resources, owner string
	transport                                         string
	usageGranularity, usageGroupBy                    string
	every, lookback, usageTrailing, usageBackfill     time.Duration
	fullEvery                                         time.Duration
	timeout                                           time.Duration
	pageSize, maxRetries                              int
	apiKeyHeader, quiet                               bool
	// given holds the flags given on the command line.
	given map[string]bool
}

func consumerSyncCommand() *command {
	f := &syncFlags{}
	return &command{
		name:    "sync",
		summary: "copy a provider's conversations, assistants, events and usage into the store",
		long: `Syncs the provider at --url into the store at --database-url, under the name
--source: every resource once, or, with --every, again and again until SIGINT or
SIGTERM.

Each page commits with its checkpoint, so an interrupted sync resumes where it
stopped and loses nothing. Later syncs ask only for what changed since the
watermark (minus --lookback); usage re-pulls the last --usage-trailing. Where the
provider lacks a sync feature (no cursor, no updatedAt, an ignored filter) every
sync is a full re-pull, and records missing from it are marked deleted. Records
that fail their schema are quarantined with the reason ('consumer quarantine').

Several processes syncing into one PostgreSQL store share the work: a lease in
the database keeps two of them from syncing the same source and resource at once.

Progress goes to standard error. Exit status: 0 when every resource synced (or
was skipped because another process holds it, or the provider does not offer
it), 1 when one failed, the sync was interrupted, the store cannot be reached
or the provider offers none of the resources, 2 for a bad command line.

With --transport openai or anthropic, the source is that vendor's administration
API: --token is the organisation's Admin key, --url is optional (by default
https://api.openai.com or https://api.anthropic.com), and only usage is synced,
hourly, by every dimension, each usage window starting at a UTC day so that the
vendor's daily costs are re-read whole (--resources, --usage-granularity and
--usage-group-by do not apply). See docs/consumer.md for what the records hold.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.databaseURL, "database-url", defaultConsumerDB, "store `URL`: sqlite:PATH, sqlite::memory: or postgres://...")
			fs.StringVar(&f.source, "source", "", "`NAME` the provider's records are kept under (required)")
			fs.StringVar(&f.url, "url", "", "base `URL` of the provider (required, except with --transport openai or anthropic; with --transport mcp its MCP endpoint, e.g. .../mcp; with --transport export the export's https base address or directory)")
			fs.StringVar(&f.transport, "transport", "rest", "`TRANSPORT` to the provider: rest, mcp (its MCP binding over streamable HTTP), export (its scheduled export, docs/export.md), openai or anthropic (the vendor's usage and costs, with an Admin key)")
			fs.StringVar(&f.token, "token", "", "`TOKEN` of the provider (sent as Authorization: Bearer)")
			fs.BoolVar(&f.apiKeyHeader, "api-key-header", false, "send the token as X-API-Key instead")
			fs.StringVar(&f.resources, "resources", "", "comma-separated `LIST` of resources (default all: conversations,assistants,events,usage)")
			fs.DurationVar(&f.every, "every", 0, "sync again every `DURATION` until stopped; 0 syncs once")
			fs.DurationVar(&f.lookback, "lookback", 5*time.Minute, "overlap of an incremental sync before the watermark")
			fs.DurationVar(&f.fullEvery, "full-every", 24*time.Hour, "re-pull conversations and assistants in full this often, to notice records deleted without a tombstone; 0 never")
			fs.StringVar(&f.usageGranularity, "usage-granularity", "hour", "`GRANULARITY` of the usage collected: hour or day")
			fs.StringVar(&f.usageGroupBy, "usage-group-by", "model,assistantId,userId,department", "comma-separated `DIMENSIONS` usage is collected by (\"none\" for totals)")
			fs.DurationVar(&f.usageTrailing, "usage-trailing", 48*time.Hour, "trailing window of usage re-pulled by every sync")
			fs.DurationVar(&f.usageBackfill, "usage-backfill", 30*24*time.Hour, "how far back the first sync of usage reaches")
			fs.IntVar(&f.pageSize, "page-size", 1000, "records asked for per page (1..1000)")
			fs.DurationVar(&f.timeout, "timeout", 60*time.Second, "timeout of each request")
			fs.IntVar(&f.maxRetries, "max-retries", 8, "retries of one request after 429, 5xx or a network error")
			fs.StringVar(&f.owner, "owner", "", "`ID` of this process in leases (default host:pid:random)")
			fs.BoolVar(&f.quiet, "quiet", false, "no progress, only the summary")
			registerExportMaxFile(fs, &f.exportMaxFileMiB)
			f.vendor.register(fs, false)
		},
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, _ []string) error {
			f.given = map[string]bool{}
			fs.Visit(func(fl *flag.Flag) { f.given[fl.Name] = true })
			return consumerSync(ctx, e, f)
		},
	}
}

func parseResources(list string) ([]consumer.Resource, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out []consumer.Resource
	for _, s := range strings.Split(list, ",") {
		r, err := consumer.ParseResource(strings.TrimSpace(s))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func consumerSync(ctx context.Context, e *env, f *syncFlags) error {
	if f.source == "" {
		return usagef("%s: --source is required", e.cmd)
	}
	vendor := f.transport == sources.TransportOpenAI || f.transport == sources.TransportAnthropic
	if vendor {
		if err := checkVendorSyncFlags(e.cmd, f); err != nil {
			return err
		}
		if err := f.vendor.check(e.cmd); err != nil {
			return err
		}
	} else if f.given["vendor-rate"] {
		return usagef("%s: --vendor-rate applies to --transport openai and anthropic only", e.cmd)
	} else if f.url == "" {
		return usagef("%s: --url is required", e.cmd)
	}
	resources, err := parseResources(f.resources)
	if err != nil {
		return usagef("%s: --resources: %v", e.cmd, err)
	}
	if f.every < 0 {
		return usagef("%s: --every must not be negative", e.cmd)
	}
	groupBy := []string{} // "none": ungrouped totals
	if g := strings.TrimSpace(f.usageGroupBy); g != "none" {
		for _, d := range strings.Split(g, ",") {
			groupBy = append(groupBy, strings.TrimSpace(d))
		}
	}
	if f.maxRetries < 0 {
		return usagef("%s: --max-retries must not be negative", e.cmd)
	}
	maxRetries := f.maxRetries
	if maxRetries == 0 {
		maxRetries = -1 // the client's "none"
	}
	var retries atomic.Int64
	progress := e.stderr
	if f.quiet {
		progress = io.Discard
	}
	onRetry := func(r consumer.Retry) {
		retries.Add(1)
		fmt.Fprintf(progress, "%s: retry %d in %s after %v\n", r.Resource, r.Attempt, r.Wait.Round(time.Millisecond), r.Err)
	}
	var client *consumer.Client
	if f.transport != "export" && !vendor { // an export may be a directory, not a URL
		client, err = consumer.NewClient(consumer.ClientConfig{
			URL: f.url, Token: f.token, APIKeyHeader: f.apiKeyHeader, Timeout: f.timeout, MaxRetries: maxRetries,
			OnRetry: onRetry,
		})
		if err != nil {
			return usagef("%s: %v", e.cmd, strings.TrimPrefix(err.Error(), "consumer: "))
		}
	}
	if f.fullEvery < 0 {
		return usagef("%s: --full-every must not be negative", e.cmd)
	}
	fullEvery := f.fullEvery
	if fullEvery == 0 {
		fullEvery = -1 // the poller's "never"
	}
	src, closeSrc, err := openSyncSource(ctx, e, f, client, maxRetries, onRetry)
	if err != nil {
		return err
	}
	defer closeSrc()
	store, err := sqlstore.Open(ctx, f.databaseURL)
	if err != nil {
		if errors.Is(err, sqldb.ErrURL) {
			return usagef("%s: --database-url: %v", e.cmd, err)
		}
		return fmt.Errorf("%s: the store at %s: %w", e.cmd, sqldb.MaskURL(f.databaseURL), err)
	}
	defer store.Close()
	pcfg := &consumer.Config{
		Source: f.source, Resources: resources, Owner: f.owner, PageSize: f.pageSize, Lookback: f.lookback,
		UsageGranularity: f.usageGranularity, UsageGroupBy: groupBy, UsageTrailing: f.usageTrailing,
		UsageBackfill: f.usageBackfill, FullEvery: fullEvery,
		OnPage: func(p consumer.PageProgress) {
			kind := "incremental"
			if p.Full {
				kind = "full"
			}
			fmt.Fprintf(progress, "%s: page %d (%s): %d records, %d quarantined, %d so far\n", p.Resource, p.Page, kind, p.Records, p.Quarantined, p.Total)
		},
	}
	if vendor {
		v := vendorusage.PollerConfig()
		pcfg.Resources, pcfg.UsageGranularity, pcfg.UsageGroupBy, pcfg.UsageAlign = v.Resources, v.UsageGranularity, v.UsageGroupBy, v.UsageAlign
	}
	poller, err := consumer.NewPoller(src, store, pcfg)
	if err != nil {
		return usagef("%s: %v", e.cmd, strings.TrimPrefix(err.Error(), "consumer: "))
	}
	report := func(res consumer.Result, err error) {
		for _, r := range res.Resources {
			fmt.Fprintln(e.stderr, syncLine(r))
		}
		fmt.Fprintf(e.stderr, "sync of %s: %d records, %d retries\n", f.source, res.Records(), retries.Swap(0))
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(e.stderr, "sync of %s failed: %v\n", f.source, err)
		}
	}
	if f.every > 0 {
		return poller.Run(ctx, f.every, report)
	}
	res, err := poller.SyncOnce(ctx)
	report(res, err)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(e.stderr, "sync of %s interrupted; the next sync resumes where it stopped\n", f.source)
		}
		return &exitError{code: ExitFailure}
	}
	if offered := offeredCount(res); offered == 0 && len(res.Resources) > 0 {
		fmt.Fprintf(e.stderr, "the provider at %s offers none of the resources synced: is --url its base address?\n", f.url)
		return &exitError{code: ExitFailure}
	}
	return nil
}

// openSyncSource returns the source of --transport: client for rest, or an
// MCP or export source at --url, with what closes it.
func openSyncSource(ctx context.Context, e *env, f *syncFlags, client *consumer.Client, maxRetries int,
	onRetry func(consumer.Retry)) (consumer.Source, func(), error) {
	switch f.transport {
	case "rest":
		return client, func() {}, nil
	case "mcp":
		if f.apiKeyHeader {
			return nil, nil, usagef("%s: --api-key-header applies to --transport rest only", e.cmd)
		}
		ms, err := mcp.NewSource(ctx, f.url, f.token)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: --transport mcp: %w", e.cmd, err)
		}
		return ms, func() { _ = ms.Close() }, nil
	case "export":
		if f.apiKeyHeader {
			return nil, nil, usagef("%s: --api-key-header applies to --transport rest only", e.cmd)
		}
		if err := checkExportFlags(e.cmd, f.url, f.token); err != nil {
			return nil, nil, err
		}
		if err := checkExportMaxFile(e.cmd, f.exportMaxFileMiB); err != nil {
			return nil, nil, err
		}
		xs, err := cexport.New(cexport.Config{URL: f.url, Token: f.token, MaxRetries: maxRetries, OnRetry: onRetry,
			MaxFileBytes: f.exportMaxFileMiB << 20, MaxPlainBytes: f.exportMaxFileMiB << 20})
		if err != nil {
			return nil, nil, usagef("%s: %v", e.cmd, strings.TrimPrefix(err.Error(), "export: "))
		}
		return xs, func() {}, nil
	case sources.TransportOpenAI, sources.TransportAnthropic:
		return vendorSyncSource(e, f, maxRetries, onRetry)
	}
	return nil, nil, usagef("%s: --transport must be rest, mcp, export, openai or anthropic, got %q", e.cmd, f.transport)
}

// checkVendorSyncFlags checks the flags of a sync with --transport openai or
// anthropic: an Admin key, and none of the flags whose choice the vendor
// source makes.
func checkVendorSyncFlags(cmd string, f *syncFlags) error {
	if f.token == "" {
		return usagef("%s: --token is required with --transport %s: the organisation's Admin key", cmd, f.transport)
	}
	for _, name := range []string{"resources", "usage-granularity", "usage-group-by", "api-key-header"} {
		if f.given[name] {
			return usagef("%s: --%s does not apply to --transport %s (it syncs usage, hourly, by every dimension)", cmd, name, f.transport)
		}
	}
	return nil
}

// vendorSyncSource returns the source of --transport openai or anthropic:
// the vendor's administration API at --url (by default the vendor's own)
// with the Admin key --token.
func vendorSyncSource(e *env, f *syncFlags, maxRetries int, onRetry func(consumer.Retry)) (consumer.Source, func(), error) {
	cfg := vendorusage.Config{BaseURL: f.url, Key: f.token, HTTPClient: &http.Client{Timeout: f.timeout}, OnRetry: onRetry,
		MaxAttempts: max(maxRetries, 0) + 1, Rate: f.vendor.rate}
	newSource := vendorusage.NewOpenAI
	if f.transport == sources.TransportAnthropic {
		newSource = vendorusage.NewAnthropic
	}
	src, err := newSource(cfg)
	if err != nil {
		return nil, nil, usagef("%s: %v", e.cmd, strings.TrimPrefix(err.Error(), "vendorusage: "))
	}
	return src, func() {}, nil
}

// syncLine is the line of standard error that says what a sync did for one
// resource.
func syncLine(r consumer.ResourceResult) string {
	line := fmt.Sprintf("%s: %d records in %d pages, %d quarantined, %s", r.Resource, r.Records, r.Pages, r.Quarantined, r.Duration.Round(time.Millisecond))
	if r.Full > 0 {
		line += fmt.Sprintf(", %d full walk(s)", r.Full)
	}
	if r.NeedsFull {
		line += " (" + r.Reason + ")"
	}
	if r.Restarts > 0 {
		line += fmt.Sprintf(", %d walk restart(s) after a rejected cursor", r.Restarts)
	}
	switch {
	case r.Err != nil && errors.Is(r.Err, context.Canceled):
		line += ": interrupted"
	case r.Err != nil:
		line += ": FAILED: " + r.Err.Error()
	case r.Skipped != "":
		line = fmt.Sprintf("%s: skipped: %s", r.Resource, r.Skipped)
	}
	return line
}

// offeredCount is the number of resources the provider did not refuse as
// not offered.
func offeredCount(res consumer.Result) int {
	n := 0
	for _, r := range res.Resources {
		if !strings.HasPrefix(r.Skipped, "the provider does not offer") {
			n++
		}
	}
	return n
}

// openStore opens an existing store for reading: a URL naming no store is
// a usage error, and nothing is created there.
func openStore(ctx context.Context, cmd, url string) (*sqlstore.Store, error) {
	s, err := sqlstore.OpenExisting(ctx, url)
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, sqldb.ErrURL):
		return nil, usagef("%s: --database-url: %v", cmd, err)
	case errors.Is(err, sqlstore.ErrNoStore):
		return nil, usagef("%s: --database-url %s: no consumer store there (run 'aiusage consumer sync' first)", cmd, sqldb.MaskURL(url))
	}
	return nil, fmt.Errorf("%s: the store at %s: %w", cmd, sqldb.MaskURL(url), err)
}

type statusFlags struct {
	databaseURL, format string
}

func consumerStatusCommand() *command {
	f := &statusFlags{}
	return &command{
		name:    "status",
		summary: "show per source and resource the records, watermark, last success and last error",
		long: `Prints one line per source and resource of the store: the records kept, those
marked deleted by a full re-pull (missing), those quarantined, the watermark,
the last success, whether every sync must be a full re-pull (and why), and the
last error. --format json prints the same as a JSON array.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.databaseURL, "database-url", defaultConsumerDB, "store `URL`: sqlite:PATH or postgres://...")
			fs.StringVar(&f.format, "format", "text", "output `FORMAT`: text or json")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			if f.format != "text" && f.format != "json" {
				return usagef("%s: --format must be text or json, got %q", e.cmd, f.format)
			}
			store, err := openStore(ctx, e.cmd, f.databaseURL)
			if err != nil {
				return err
			}
			defer store.Close()
			st, err := store.Status(ctx)
			if err != nil {
				return err
			}
			if f.format == "json" {
				return writeStatusJSON(e.stdout, st)
			}
			return writeStatusText(e.stdout, st)
		},
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func writeStatusText(w io.Writer, st []consumer.Status) error {
	if len(st) == 0 {
		_, err := fmt.Fprintln(w, "no source has been synced into this store")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tRESOURCE\tRECORDS\tMISSING\tQUARANTINED\tWATERMARK\tLAST SUCCESS\tFULL RE-PULL\tLAST ERROR")
	for _, s := range st {
		full := "no"
		if s.Checkpoint.NeedsFull {
			full = "yes: " + s.Checkpoint.NeedsFullReason
		}
		lastErr := "-"
		if s.Checkpoint.LastError != "" {
			lastErr = fmtTime(s.Checkpoint.LastErrorAt) + " " + oneLine(s.Checkpoint.LastError, 120)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", s.Source, s.Resource, s.Records, s.Missing, s.Quarantined,
			fmtTime(s.Checkpoint.Watermark), fmtTime(s.Checkpoint.LastSuccess), full, lastErr)
	}
	return tw.Flush()
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// statusJSON is one element of 'consumer status --format json'.
type statusJSON struct {
	Source          string  `json:"source"`
	Resource        string  `json:"resource"`
	Records         int64   `json:"records"`
	Missing         int64   `json:"missing"`
	Quarantined     int64   `json:"quarantined"`
	Watermark       *string `json:"watermark"`
	LastSuccess     *string `json:"lastSuccess"`
	NeedsFull       bool    `json:"needsFullRepull"`
	NeedsFullReason string  `json:"needsFullRepullReason,omitempty"`
	InProgress      bool    `json:"inProgress"`
	LastError       string  `json:"lastError,omitempty"`
	LastErrorAt     *string `json:"lastErrorAt,omitempty"`
}

func jsonTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format("2006-01-02T15:04:05.000Z")
	return &s
}

func writeStatusJSON(w io.Writer, st []consumer.Status) error {
	out := make([]statusJSON, 0, len(st))
	for _, s := range st {
		c := s.Checkpoint
		out = append(out, statusJSON{Source: s.Source, Resource: string(s.Resource), Records: s.Records, Missing: s.Missing,
			Quarantined: s.Quarantined, Watermark: jsonTime(c.Watermark), LastSuccess: jsonTime(c.LastSuccess),
			NeedsFull: c.NeedsFull, NeedsFullReason: c.NeedsFullReason, InProgress: c.InProgress,
			LastError: c.LastError, LastErrorAt: jsonTime(c.LastErrorAt)})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

type exportFlags struct {
	databaseURL, source, resource, output string
	includeMissing                        bool
}

func consumerExportCommand() *command {
	f := &exportFlags{}
	return &command{
		name:    "export",
		summary: "write the stored records of a source as NDJSON, exactly as received",
		long: `Writes the stored records of one source and resource as NDJSON: one record a
line, in the provider's order ((updatedAt, id) for conversations and assistants,
(occurredAt, id) for events, (startAt, dimensions) for usage), each exactly as
the provider sent it, tombstones included. Records marked deleted because a full
re-pull no longer returned them are left out unless --include-missing.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.databaseURL, "database-url", defaultConsumerDB, "store `URL`: sqlite:PATH or postgres://...")
			fs.StringVar(&f.source, "source", "", "`NAME` of the source (required)")
			fs.StringVar(&f.resource, "resource", "", "`RESOURCE`: conversations, assistants, events or usage (required)")
			fs.StringVar(&f.output, "output", "", "write to `FILE` instead of standard output")
			fs.BoolVar(&f.includeMissing, "include-missing", false, "also write records a full re-pull no longer returned")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			if f.source == "" || f.resource == "" {
				return usagef("%s: --source and --resource are required", e.cmd)
			}
			r, err := consumer.ParseResource(f.resource)
			if err != nil {
				return usagef("%s: --resource: %v", e.cmd, err)
			}
			store, err := openStore(ctx, e.cmd, f.databaseURL)
			if err != nil {
				return err
			}
			defer store.Close()
			if err := checkSource(ctx, store, f.source); err != nil {
				return err
			}
			return writeTo(e.stdout, f.output, func(w *bufio.Writer) error {
				return store.Export(ctx, f.source, r, f.includeMissing, func(rec json.RawMessage) error {
					w.Write(rec)
					return w.WriteByte('\n')
				})
			})
		},
	}
}

// checkSource is a usage error naming the known sources when source has
// never been synced into store.
func checkSource(ctx context.Context, store *sqlstore.Store, source string) error {
	known, err := store.Sources(ctx)
	if err != nil {
		return err
	}
	if slices.Contains(known, source) {
		return nil
	}
	if len(known) == 0 {
		return usagef("no source %q: nothing has been synced into this store", source)
	}
	return usagef("no source %q in the store (known: %s)", source, strings.Join(known, ", "))
}

// writeTo runs fn on a buffered writer over stdout or the file path.
func writeTo(stdout io.Writer, path string, fn func(*bufio.Writer) error) (err error) {
	out := stdout
	if path != "" {
		file, err := os.Create(path)
		if err != nil {
			return usagef("--output: %v", err)
		}
		defer func() {
			if cerr := file.Close(); err == nil {
				err = cerr
			}
		}()
		out = file
	}
	w := bufio.NewWriterSize(out, 256<<10)
	if err := fn(w); err != nil {
		return err
	}
	return w.Flush()
}

type quarantineFlags struct {
	databaseURL, source string
}

func consumerQuarantineCommand() *command {
	f := &quarantineFlags{}
	return &command{
		name:    "quarantine",
		summary: "list the records that failed their schema, with the reason",
		long: `Writes the quarantined records as NDJSON, oldest first: one object a line with
the source, resource, id, reason, when it was quarantined, and the record as
received ("record"; "recordBase64" when it is not UTF-8 JSON). A record leaves quarantine when the provider later sends it valid.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.databaseURL, "database-url", defaultConsumerDB, "store `URL`: sqlite:PATH or postgres://...")
			fs.StringVar(&f.source, "source", "", "only the records of source `NAME`")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			store, err := openStore(ctx, e.cmd, f.databaseURL)
			if err != nil {
				return err
			}
			defer store.Close()
			return writeTo(e.stdout, "", func(w *bufio.Writer) error {
				enc := json.NewEncoder(w)
				return store.Quarantined(ctx, f.source, func(q consumer.Quarantine) error {
					line := struct {
						Source   string          `json:"source"`
						Resource string          `json:"resource"`
						ID       string          `json:"id"`
						Reason   string          `json:"reason"`
						At       string          `json:"at"`
						Record   json.RawMessage `json:"record,omitempty"`
						// RecordBase64 holds a record that is not JSON (or
						// not UTF-8), byte for byte.
						RecordBase64 []byte `json:"recordBase64,omitempty"`
					}{Source: q.Source, Resource: string(q.Resource), ID: q.ID, Reason: q.Reason, At: q.At.UTC().Format(spec.TimeLayout)}
					if utf8.Valid(q.JSON) && json.Valid(q.JSON) {
						line.Record = q.JSON
					} else {
						line.RecordBase64 = q.JSON
					}
					return enc.Encode(line)
				})
			})
		},
	}
}
