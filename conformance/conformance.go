package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Status is the outcome of one check at one endpoint.
type Status string

// Statuses.
const (
	StatusPass  Status = "PASS"
	StatusFail  Status = "FAIL"
	StatusWarn  Status = "WARN"  // a SHOULD that failed, or a finding worth reporting
	StatusSkip  Status = "SKIP"  // a precondition is not met (no ties in the data, no second token)
	StatusError Status = "ERROR" // the check could not run (the provider stopped answering)
)

// Resources the suite can test.
const (
	Conversations = "conversations"
	Assistants    = "assistants"
	Events        = "events"
	Usage         = "usage"
)

// AllResources lists every resource, in report order.
var AllResources = []string{Conversations, Assistants, Events, Usage}

// Config says which provider to check and how.
type Config struct {
	// BaseURL is the provider's base address; endpoints are BaseURL +
	// "/conversations" and so on. Required.
	BaseURL string
	// Token is a credential of the provider that reads everything. Required.
	Token string
	// UsagelessToken is a credential of the same customer with every scope
	// but read:usage (the CLI's --token-without-usage), not a usage-only
	// token; AUTH-03 is skipped without it.
	UsagelessToken string
	// OtherTenantToken is a credential of another customer; AUTH-04 and
	// AUTH-07 are skipped without it.
	OtherTenantToken string
	// Resources to test; the default is all four. A provider that does not
	// offer a resource (it answers 501 or 404) has its checks skipped, and
	// HTTP-04 says so: a warning for 501, a failure for 404.
	Resources []string
	// PageCap bounds the pages of one walk. Default 500.
	PageCap int
	// RequestTimeout bounds each request. Default 30 s.
	RequestTimeout time.Duration
	// MaxRate is the most requests per second the suite sends. Default 50.
	MaxRate float64
	// Baseline lists the ids of checks expected to fail: their failures
	// are reported but do not fail the run, and an entry that passes is
	// reported as stale. See [ReadBaseline].
	Baseline []string
	// Only, when not empty, runs only these check ids (or id prefixes such as
	// "PAGE"). Skip leaves these out.
	Only, Skip []string
	// Wait is how long the suite waits for a provider that cannot be
	// reached yet (connection refused, still starting) before Run gives
	// up with ErrUnreachable; it tries again every 200 ms and writes a
	// progress line. Default 0: one try. The CLI waits 5 s by default.
	Wait time.Duration
	// Client sends the requests; the default is a client with RequestTimeout
	// that follows no redirect (a 3xx is judged as the answer). A client
	// given here is used through a copy that never follows a redirect to
	// another origin (scheme, host and port) or from https to http, so the
	// token stays with the provider.
	Client *http.Client
	// Progress, when set, receives progress lines while collections are
	// walked.
	Progress io.Writer
}

func (c *Config) withDefaults() (Config, error) {
	cfg := *c
	if cfg.BaseURL == "" {
		return cfg, errors.New("conformance: the provider's base URL is required")
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cfg, fmt.Errorf("conformance: base URL %q must be an absolute http or https URL", cfg.BaseURL)
	}
	cfg.BaseURL = strings.TrimSuffix(cfg.BaseURL, "/")
	if cfg.Token == "" {
		return cfg, errors.New("conformance: a token is required")
	}
	if len(cfg.Resources) == 0 {
		cfg.Resources = AllResources
	}
	for _, r := range cfg.Resources {
		if !slices.Contains(AllResources, r) {
			return cfg, fmt.Errorf("conformance: unknown resource %q (want %s)", r, strings.Join(AllResources, ", "))
		}
	}
	if cfg.PageCap <= 0 {
		cfg.PageCap = 500
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.MaxRate <= 0 {
		cfg.MaxRate = 50
	}
	for _, id := range append(append(append([]string{}, cfg.Only...), cfg.Skip...), cfg.Baseline...) {
		if !knownIDOrPrefix(id) {
			return cfg, fmt.Errorf("conformance: unknown check id %q", id)
		}
	}
	if cfg.Client == nil {
		// Redirects are answers to judge, not to follow: following one
		// would also send the credential on.
		cfg.Client = &http.Client{Timeout: cfg.RequestTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	} else {
		cfg.Client = sameOriginOnly(cfg.Client)
	}
	return cfg, nil
}

func knownIDOrPrefix(id string) bool {
	for _, c := range Catalogue {
		if c.ID == id || strings.HasPrefix(c.ID, id+"-") {
			return true
		}
	}
	return false
}

// Evidence lets a person reproduce a result.
type Evidence struct {
	// Curl is a command reproducing the request, credentials masked.
	Curl string `json:"curl,omitempty"`
	// Request is the method and URL.
	Request string `json:"request,omitempty"`
	// Response is the status line and the start of the body.
	Response string `json:"response,omitempty"`
	// Pointer is the JSON pointer of a schema finding.
	Pointer string `json:"pointer,omitempty"`
}

// Result is the outcome of one check at one endpoint.
type Result struct {
	ID       string    `json:"id"`
	Level    Level     `json:"level"`
	Status   Status    `json:"status"`
	Endpoint string    `json:"endpoint"`
	Title    string    `json:"title"`
	Rule     string    `json:"rule"`
	Message  string    `json:"message"`
	Evidence *Evidence `json:"evidence,omitempty"`
	// Baselined marks a failure listed in the baseline: expected, and not
	// failing the run.
	Baselined bool `json:"baselined,omitempty"`
}

// Report is the outcome of a run.
type Report struct {
	URL      string        `json:"url"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	Requests int           `json:"requests"`
	Results  []Result      `json:"results"`
	// Stale lists baseline entries whose check no longer fails.
	Stale []string `json:"stale,omitempty"`
}

// Failed reports whether a MUST check failed (or, with strict, a SHOULD
// check), leaving out failures listed in the baseline.
func (r *Report) Failed(strict bool) bool {
	for _, res := range r.Results {
		if res.Baselined {
			continue
		}
		if res.Status == StatusFail || res.Status == StatusError && res.Level == LevelMust {
			return true
		}
		if strict && res.Status == StatusWarn && res.Level == LevelShould {
			return true
		}
	}
	return false
}

// Counts returns the number of results of each status.
func (r *Report) Counts() map[Status]int {
	m := map[Status]int{}
	for _, res := range r.Results {
		m[res.Status]++
	}
	return m
}

// ErrUnreachable is returned by Run when the provider cannot be reached at
// all.
var ErrUnreachable = errors.New("conformance: provider unreachable")

// Run checks the provider of cfg and returns the report. The error is
// non-nil only when the configuration is wrong or the provider cannot be
// reached at all ([ErrUnreachable]); failed checks are in the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := newSession(c)
	if err := s.probe(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	for _, fam := range families {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		fam(ctx, s)
	}
	s.finish()
	return &Report{
		URL:      c.BaseURL,
		Started:  start,
		Duration: time.Since(start),
		Requests: s.requestCount(),
		Results:  s.resultValues(),
		Stale:    s.stale(),
	}, nil
}
