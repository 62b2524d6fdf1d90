package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aiusage/kit/conformance"
)

type conformanceFlags struct {
	url, token, otherTenantToken         string
	tokenWithoutUsage, usageLessToken    string // the second is the old name of the first
	format, output, baseline, only, skip string
	resources                            string
	strict, quiet, list                  bool
	rate                                 float64
	pageCap                              int
	timeout, wait                        time.Duration
}

func conformanceCommand() *command {
	f := &conformanceFlags{}
	return &command{
		subs:    []*command{conformancePushCommand()},
		name:    "conformance",
		summary: "check a provider of the AI usage data interface, or its scheduled export, against the specification",
		args:    "[export DIR|URL]",
		long: `Runs the conformance suite against the provider at --url, black-box, over
HTTP: any provider, in any language. docs/conformance.md describes every check;
--list prints the same catalogue. Checks that need a token with every scope
but read:usage (--token-without-usage, for AUTH-03; not a usage-only token)
or a token of another
customer (--other-tenant-token, for AUTH-04 and AUTH-07) are skipped without
them. A provider that is still starting is waited for (--wait).

Exit status: 0 when no MUST check fails (nor a SHOULD check with --strict),
1 when one does, 2 when the provider cannot be reached or the configuration
is wrong. A baseline file lists check ids expected to fail, one per line
(# starts a comment): their failures do not fail the run, and an entry that
no longer fails is reported as stale.

'aiusage conformance export DIR|URL' checks a scheduled export instead
(docs/export.md): index.json, every manifest and every file, from a directory
or over http(s) (--token, when given, is sent as a bearer token), with the
checks EXP-01 to EXP-09, the same report formats, baselines and exit codes
(2: the export cannot be read at all). --list with export prints those checks.
--url, --token-without-usage, --other-tenant-token, --resources, --rate,
--page-cap and --wait do not apply to an export.


'aiusage conformance push' checks the other transport: a vendor's pusher,
from the receiving end.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.url, "url", "", "base `URL` of the provider (required)")
			fs.StringVar(&f.token, "token", "", "`TOKEN` that reads everything (required)")
			fs.StringVar(&f.tokenWithoutUsage, "token-without-usage", "", "a `TOKEN` of the same customer that has every scope but read:usage (enables AUTH-03)")
			fs.StringVar(&f.usageLessToken, "usage-less-token", "", "old name of --token-without-usage (`TOKEN`)")
			fs.StringVar(&f.otherTenantToken, "other-tenant-token", "", "`TOKEN` of another customer (enables AUTH-04, AUTH-07)")
			fs.StringVar(&f.format, "format", "text", "report `FORMAT`: text, json, junit or html (one self-contained file)")
			fs.StringVar(&f.output, "output", "", "write the report to `FILE` instead of standard output")
			fs.StringVar(&f.baseline, "baseline", "", "`FILE` of check ids expected to fail")
			fs.StringVar(&f.only, "only", "", "run only these comma-separated check `IDS` (or prefixes such as PAGE)")
			fs.StringVar(&f.skip, "skip", "", "leave out these comma-separated check `IDS` (or prefixes)")
			fs.StringVar(&f.resources, "resources", "", "comma-separated `LIST` of resources to test (default all: conversations,assistants,events,usage)")
			fs.BoolVar(&f.strict, "strict", false, "a failed SHOULD check fails the run too")
			fs.BoolVar(&f.quiet, "quiet", false, "no progress on standard error")
			fs.BoolVar(&f.list, "list", false, "print the catalogue of checks and exit (no provider needed)")
			fs.Float64Var(&f.rate, "rate", 50, "most requests per second")
			fs.IntVar(&f.pageCap, "page-cap", 500, "most pages read in one walk")
			fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "timeout of each request")
			fs.DurationVar(&f.wait, "wait", 5*time.Second, "wait up to `DURATION` for a provider that cannot be reached yet (0: do not wait)")
		},
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
			if len(args) > 0 {
				return runConformanceExport(ctx, e, fs, f, args)
			}
			return runConformance(ctx, e, f)
		},
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func runConformance(ctx context.Context, e *env, f *conformanceFlags) error {
	if f.list {
		return conformance.WriteCatalogueText(e.stdout)
	}
	if f.url == "" || f.token == "" {
		return usagef("%s: --url and --token are required", e.cmd)
	}
	switch f.format {
	case "text", "json", "junit", "html":
	default:
		return usagef("%s: --format must be text, json, junit or html, got %q", e.cmd, f.format)
	}
	if f.rate <= 0 {
		return usagef("%s: --rate must be positive", e.cmd)
	}
	if f.wait < 0 {
		return usagef("%s: --wait must not be negative", e.cmd)
	}
	withoutUsage := f.tokenWithoutUsage
	if withoutUsage == "" {
		withoutUsage = f.usageLessToken
	}
	cfg := conformance.Config{
		BaseURL: f.url, Token: f.token, UsagelessToken: withoutUsage, OtherTenantToken: f.otherTenantToken,
		Resources: splitList(f.resources), Only: splitList(f.only), Skip: splitList(f.skip),
		MaxRate: f.rate, PageCap: f.pageCap, RequestTimeout: f.timeout, Wait: f.wait,
	}
	if err := f.progressAndBaseline(e, &cfg.Progress, &cfg.Baseline); err != nil {
		return err
	}
	rep, err := conformance.Run(ctx, cfg)
	return f.report(e, rep, err)
}

// progressAndBaseline sets where a run reports its progress (standard
// error, unless --quiet) and the check ids --baseline expects to fail.
func (f *conformanceFlags) progressAndBaseline(e *env, progress *io.Writer, baseline *[]string) error {
	if !f.quiet {
		*progress = e.stderr
	}
	if f.baseline != "" {
		ids, err := conformance.ReadBaseline(f.baseline)
		if err != nil {
			return usagef("%s: --baseline: %v", e.cmd, err)
		}
		*baseline = ids
	}
	return nil
}

// report writes the report of a run that ended with err: a run that could
// not check at all is a usage error (exit 2), else the report decides.
func (f *conformanceFlags) report(e *env, rep *conformance.Report, err error) error {
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return err
		}
		return usagef("%v", err)
	}
	return writeConformanceReport(e, rep, f.format, f.output, f.strict, true)
}

// runConformanceExport runs 'aiusage conformance export DIR|URL'.
func runConformanceExport(ctx context.Context, e *env, fs *flag.FlagSet, f *conformanceFlags, args []string) error {
	if args[0] != "export" {
		return usagef("%s: unknown argument %q: the only one is 'export DIR|URL'", e.cmd, args[0])
	}
	if f.list {
		return conformance.WriteExportCatalogueText(e.stdout)
	}
	if len(args) != 2 {
		return usagef("%s export: want one DIR or URL, got %d arguments", e.cmd, len(args)-1)
	}
	var wrong []string
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "token-without-usage", "usage-less-token", "other-tenant-token", "resources", "rate", "page-cap", "wait":
			wrong = append(wrong, "--"+fl.Name)
		}
	})
	if len(wrong) > 0 {
		return usagef("%s export: %s do(es) not apply to an export", e.cmd, strings.Join(wrong, ", "))
	}
	switch f.format {
	case "text", "json", "junit", "html":
	default:
		return usagef("%s: --format must be text, json, junit or html, got %q", e.cmd, f.format)
	}
	loc := args[1]
	if !strings.Contains(loc, "://") && !filepath.IsAbs(loc) {
		abs, err := filepath.Abs(loc)
		if err != nil {
			return usagef("%s export: %v", e.cmd, err)
		}
		loc = abs
	}
	cfg := conformance.ExportConfig{Location: loc, Token: f.token, RequestTimeout: f.timeout,
		Only: splitList(f.only), Skip: splitList(f.skip)}
	if err := f.progressAndBaseline(e, &cfg.Progress, &cfg.Baseline); err != nil {
		return err
	}
	rep, err := conformance.RunExport(ctx, cfg)
	return f.report(e, rep, err)
}

// writeConformanceReport writes rep in format to output (standard output
// when ""), with a summary line on standard error for a report that is not
// text on standard output, and returns the exit error of a failed run.
func writeConformanceReport(e *env, rep *conformance.Report, format, output string, strict, summary bool) error {
	var w io.Writer = e.stdout
	color := false
	if output != "" {
		file, err := os.Create(output)
		if err != nil {
			return usagef("%s: --output: %v", e.cmd, err)
		}
		defer file.Close()
		w = file
	} else if file, ok := e.stdout.(*os.File); ok && isTerminal(file) && os.Getenv("NO_COLOR") == "" {
		color = true
	}
	var err error
	switch format {
	case "json":
		err = rep.WriteJSON(w)
	case "junit":
		err = rep.WriteJUnit(w)
	case "html":
		err = rep.WriteHTML(w)
	default:
		err = rep.WriteText(w, color)
	}
	if err != nil {
		return err
	}
	if summary && (output != "" || format != "text") {
		c := rep.Counts()
		fmt.Fprintf(e.stderr, "%d checks: %d passed, %d failed, %d warned, %d skipped, %d errored\n",
			len(rep.Results), c[conformance.StatusPass], c[conformance.StatusFail], c[conformance.StatusWarn], c[conformance.StatusSkip], c[conformance.StatusError])
	}
	if rep.Failed(strict) {
		return &exitError{code: ExitFailure}
	}
	return nil
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
