package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/aiusage/kit/conformance"
)

type conformancePushFlags struct {
	listen, secret, format, output string
	duration                       time.Duration
	strict, quiet                  bool
}

func conformancePushCommand() *command {
	f := &conformancePushFlags{}
	return &command{
		name:    "push",
		summary: "receive a vendor's pushes for a while and check them against the specification",
		long: `Listens on --listen for --for and checks every delivery a pusher sends there
(point the pusher at the address printed on standard error): the Standard
Webhooks headers and signature under --secret, the timestamp, the envelope and
every record's schema, and that deliveries answered 500 and 429 on purpose (the
first two) arrive again under the same webhook-id with the same body.
docs/conformance.md describes the checks (PUSH-01 to PUSH-10).

Then prints the report in --format, like 'aiusage conformance'. Exit status: 0
when no MUST check fails (nor a SHOULD check with --strict), 1 when one does, 2
when the configuration is wrong or the address cannot be listened on.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.listen, "listen", "127.0.0.1:0", "`ADDR` to listen on (port 0: any free port)")
			fs.StringVar(&f.secret, "secret", "", "signing `SECRET` given to the pusher: whsec_ and base64 (required)")
			fs.DurationVar(&f.duration, "for", time.Minute, "listen for `DURATION`, long enough for the pusher's retries")
			fs.StringVar(&f.format, "format", "text", "report `FORMAT`: text, json, junit or html (one self-contained file)")
			fs.StringVar(&f.output, "output", "", "write the report to `FILE` instead of standard output")
			fs.BoolVar(&f.strict, "strict", false, "a failed SHOULD check fails the run too")
			fs.BoolVar(&f.quiet, "quiet", false, "no progress on standard error")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			return runConformancePush(ctx, e, f)
		},
	}
}

func runConformancePush(ctx context.Context, e *env, f *conformancePushFlags) error {
	if f.secret == "" {
		return usagef("%s: --secret is required: the signing secret given to the pusher", e.cmd)
	}
	switch f.format {
	case "text", "json", "junit", "html":
	default:
		return usagef("%s: --format must be text, json, junit or html, got %q", e.cmd, f.format)
	}
	if f.duration <= 0 {
		return usagef("%s: --for must be positive", e.cmd)
	}
	cfg := conformance.PushConfig{Secret: f.secret}
	if !f.quiet {
		cfg.Progress = e.stderr
	}
	rc, err := conformance.NewPushReceiver(cfg)
	if err != nil {
		return usagef("%s: --secret: %v", e.cmd, err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return usagef("%s: --listen: %v", e.cmd, err)
	}
	addr := "http://" + ln.Addr().String()
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	started := time.Now()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(e.stderr, "receiving pushes at %s for %s\n", addr, f.duration)
	select {
	case <-ctx.Done():
	case <-time.After(f.duration):
	case err := <-done:
		return fmt.Errorf("%s: %w", e.cmd, err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: %w", e.cmd, err)
	}
	return writeConformanceReport(e, rc.Report(addr, started), f.format, f.output, f.strict, !f.quiet)
}
