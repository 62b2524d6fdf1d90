package vendorusage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/infra/httpclient"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// The vendors' API addresses, the defaults of [Config.BaseURL].
const (
	DefaultOpenAIURL    = "https://api.openai.com"
	DefaultAnthropicURL = "https://api.anthropic.com"
)

// DefaultRate is the default of [Config.Rate]: one request a second, which
// a first sync of 30 days finishes in seconds.
const DefaultRate = 1.0

// Config configures a [Source]. Only Key is required; every other field has
// the default its comment names.
type Config struct {
	// BaseURL is the vendor's API address, without the /v1 path. Default
	// [DefaultOpenAIURL] or [DefaultAnthropicURL]; set for tests and for
	// compatible gateways.
	BaseURL string
	// Key is the organisation's Admin API key (OpenAI sk-admin-...,
	// Anthropic sk-ant-admin...). Required. It is sent to BaseURL's origin
	// only, and never logged nor put in an error.
	Key string
	// HTTPClient sends the requests. Default: a client with a 60s timeout.
	// Its redirects are restricted to BaseURL's origin
	// ([consumer.SameOriginRedirects]).
	HTTPClient *http.Client
	// Rate bounds the requests sent a second, retries included. Default 1.
	Rate float64
	// Burst is how many requests may go at once before Rate applies.
	// Default 2.
	Burst int
	// MaxAttempts bounds the attempts of one request: a 429, a 5xx or a
	// network error is retried until then. Default 5.
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the exponential backoff (with full
	// jitter) between attempts. Defaults 1s and 60s.
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter caps the wait a 429's retry-after asks for. Default 5m.
	MaxRetryAfter time.Duration
	// Now is the clock against which a retry-after date is read. Default
	// time.Now.
	Now func() time.Time
	// Logger receives debug lines about requests (never the key). Default:
	// nothing is logged.
	Logger *slog.Logger
	// OnRetry, when set, is called before each retry with what failed.
	OnRetry func(consumer.Retry)
}

// Source reads one organisation's usage and costs from a vendor's
// administration API and serves them as usage buckets of the AI usage data
// interface: a [consumer.Source] for [consumer.NewPoller]. It is safe for
// concurrent use.
type Source struct {
	v       *vendor
	cfg     Config
	base    *url.URL
	client  *http.Client
	limiter *rate.Limiter

	backoff *httpclient.Backoff

	usersMu sync.Mutex
	users   map[string]string // vendor user id -> lower-cased email
	usersAt time.Time         // when users was loaded; zero: never
}

var _ consumer.Source = (*Source)(nil)

// NewOpenAI returns a Source reading an OpenAI organisation's completions
// usage, costs and users, or an error naming the bad field of cfg.
func NewOpenAI(cfg Config) (*Source, error) { return newSource(openAI, cfg) }

// NewAnthropic returns a Source reading an Anthropic organisation's
// messages usage report, cost report and users, or an error naming the bad
// field of cfg.
func NewAnthropic(cfg Config) (*Source, error) { return newSource(anthropic, cfg) }

func newSource(v *vendor, cfg Config) (*Source, error) {
	if strings.TrimSpace(cfg.Key) == "" {
		return nil, fmt.Errorf("vendorusage: Config.Key (the %s Admin API key) is required", v.name)
	}
	if strings.ContainsAny(cfg.Key, "\r\n\x00") {
		return nil, fmt.Errorf("vendorusage: Config.Key holds a control character")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = v.defaultURL
	}
	base, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" || base.RawQuery != "" || base.Fragment != "" {
		return nil, fmt.Errorf("vendorusage: Config.BaseURL %q is not an http(s) address without query", cfg.BaseURL)
	}
	if base.User != nil {
		return nil, errors.New("vendorusage: Config.BaseURL must not hold credentials")
	}
	if cfg.Rate == 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.Burst == 0 {
		cfg.Burst = 2
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.Rate < 0 || cfg.Burst < 0 || cfg.MaxAttempts < 0 {
		return nil, errors.New("vendorusage: Config.Rate, Burst and MaxAttempts must not be negative")
	}
	for _, d := range []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{{"MinBackoff", &cfg.MinBackoff, time.Second}, {"MaxBackoff", &cfg.MaxBackoff, time.Minute}, {"MaxRetryAfter", &cfg.MaxRetryAfter, 5 * time.Minute}} {
		if *d.d < 0 {
			return nil, fmt.Errorf("vendorusage: Config.%s must not be negative", d.name)
		}
		if *d.d == 0 {
			*d.d = d.def
		}
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		return nil, errors.New("vendorusage: Config.MaxBackoff is below MinBackoff")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: time.Minute}
	}
	return &Source{
		v: v, cfg: cfg, base: base,
		client:  consumer.SameOriginRedirects(hc),
		limiter: rate.NewLimiter(rate.Limit(cfg.Rate), cfg.Burst),
		backoff: httpclient.NewBackoff(cfg.MinBackoff, cfg.MaxBackoff, cfg.MaxRetryAfter, 0),
	}, nil
}

// Vendor names the vendor: "openai" or "anthropic".
func (s *Source) Vendor() string { return s.v.name }

// Fetch returns the page of r that q selects. Only [consumer.Usage] is
// offered (the others are an error of kind provider.ErrUnsupported), for
// hourly buckets (q.Granularity "hour" or "") grouped by all four
// dimensions (q.GroupBy nil or all of them) in [q.StartAt, q.EndAt), both
// on a UTC hour. A walk reads the vendor's hourly usage first, then its
// daily costs of the days that start in the window; each page holds
// complete buckets.
func (s *Source) Fetch(ctx context.Context, r consumer.Resource, q consumer.Query) (consumer.Page, error) {
	if r != consumer.Usage {
		return consumer.Page{}, spec.Errorf(provider.ErrUnsupported, "the %s usage source offers usage only, not %s", s.v.title, r)
	}
	if err := checkQuery(q); err != nil {
		return consumer.Page{}, err
	}
	c, err := decodeCursor(q.Cursor, q.StartAt, q.EndAt)
	if err != nil {
		return consumer.Page{}, err
	}
	switch c.Phase {
	case phaseUsage:
		return s.fetchUsage(ctx, q, c)
	default:
		return s.fetchCosts(ctx, q, c)
	}
}

func checkQuery(q consumer.Query) error {
	if q.Granularity != "" && q.Granularity != spec.GranularityHour {
		return provider.Invalid("granularity", "%q is not offered; the vendors' usage is collected in hourly buckets", q.Granularity)
	}
	if q.GroupBy != nil {
		g := slices.Clone(q.GroupBy)
		slices.Sort(g)
		all := slices.Clone(spec.Dimensions)
		slices.Sort(all)
		if !slices.Equal(g, all) {
			return provider.Invalid("groupBy", "%v: the vendors' usage is collected grouped by all four dimensions", q.GroupBy)
		}
	}
	if q.StartAt.IsZero() || q.EndAt.IsZero() || !q.EndAt.After(q.StartAt) {
		return provider.Invalid("startAt", "a usage window needs startAt before endAt")
	}
	for name, t := range map[string]time.Time{"startAt": q.StartAt, "endAt": q.EndAt} {
		if !t.Truncate(time.Hour).Equal(t) {
			return provider.Invalid(name, "%s is not on a UTC hour", t.UTC().Format(time.RFC3339Nano))
		}
	}
	return nil
}

// fetchUsage reads one page of hourly usage; after its last page the walk
// goes on with the costs when a day starts in the window.
func (s *Source) fetchUsage(ctx context.Context, q consumer.Query, c cursor) (consumer.Page, error) {
	limit := bucketLimit(q.Limit, maxHourBuckets)
	body, err := s.get(ctx, s.v.usagePath, s.v.usageQuery(q.StartAt, q.EndAt, limit, c.Token))
	if err != nil {
		return consumer.Page{}, err
	}
	ans, err := s.v.parseUsage(body)
	if err != nil {
		return consumer.Page{}, s.badAnswer(s.v.usagePath, err)
	}
	if err := s.resolveUsers(ctx, ans.users()); err != nil {
		return consumer.Page{}, err
	}
	recs, err := s.usageRecords(ans)
	if err != nil {
		return consumer.Page{}, err
	}
	page := consumer.Page{Records: recs, Paginated: true}
	switch {
	case ans.HasMore && ans.NextPage != "":
		page.HasMore, page.NextCursor = true, encodeCursor(cursor{Phase: phaseUsage, Token: ans.NextPage}, q.StartAt, q.EndAt)
	case ans.HasMore:
		return consumer.Page{}, s.badAnswer(s.v.usagePath, errors.New("has_more without next_page"))
	default:
		if from, until := costDays(q.StartAt, q.EndAt); from.Before(until) {
			page.HasMore, page.NextCursor = true, encodeCursor(cursor{Phase: phaseCosts}, q.StartAt, q.EndAt)
		}
	}
	return page, nil
}

// fetchCosts reads one page of daily costs.
func (s *Source) fetchCosts(ctx context.Context, q consumer.Query, c cursor) (consumer.Page, error) {
	from, until := costDays(q.StartAt, q.EndAt)
	if !from.Before(until) {
		return consumer.Page{Paginated: true}, nil
	}
	limit := bucketLimit(q.Limit, s.v.maxCostBuckets)
	body, err := s.get(ctx, s.v.costsPath, s.v.costsQuery(from, until, limit, c.Token))
	if err != nil {
		return consumer.Page{}, err
	}
	ans, err := s.v.parseCosts(body)
	if err != nil {
		return consumer.Page{}, s.badAnswer(s.v.costsPath, err)
	}
	recs, err := s.costRecords(ans, from, until)
	if err != nil {
		return consumer.Page{}, err
	}
	page := consumer.Page{Records: recs, Paginated: true}
	if ans.HasMore {
		if ans.NextPage == "" {
			return consumer.Page{}, s.badAnswer(s.v.costsPath, errors.New("has_more without next_page"))
		}
		page.HasMore, page.NextCursor = true, encodeCursor(cursor{Phase: phaseCosts, Token: ans.NextPage}, q.StartAt, q.EndAt)
	}
	return page, nil
}

// costDays returns the days whose cost buckets belong to [start, end):
// those that start in it.
func costDays(start, end time.Time) (from, until time.Time) {
	return ceilDay(start), ceilDay(end)
}

func ceilDay(t time.Time) time.Time {
	d := t.UTC().Truncate(24 * time.Hour)
	if d.Before(t) {
		d = d.Add(24 * time.Hour)
	}
	return d
}

// The vendors' caps of buckets per page.
const maxHourBuckets = 168

func bucketLimit(asked, max int) int {
	if asked > 0 && asked < max {
		return asked
	}
	return max
}

// badAnswer is the error of an answer that is not in the vendor's shape.
func (s *Source) badAnswer(path string, err error) error {
	return spec.Errorf(provider.ErrUnavailable, "%s answered GET %s in an unexpected shape: %v", s.v.title, path, err)
}

// The phases of a walk.
const (
	phaseUsage = "usage"
	phaseCosts = "costs"
)

// cursor is the position of a walk: its phase and the vendor's next_page
// token (empty: the phase's first page).
type cursor struct {
	Phase string `json:"p"`
	Token string `json:"t,omitempty"`
	// Start and End are the window's, in Unix seconds: a cursor is valid
	// only for the window it was made for.
	Start int64 `json:"s"`
	End   int64 `json:"e"`
}

// decodeCursor reads an opaque cursor ("" starts the usage phase).
func decodeCursor(s string, start, end time.Time) (cursor, error) {
	if s == "" {
		return cursor{Phase: phaseUsage}, nil
	}
	raw, err := cursorEncoding.DecodeString(s)
	if err != nil || len(raw) > maxCursor {
		return cursor{}, provider.Invalid("cursor", "not a cursor of this source")
	}
	var c cursor
	if err := json.Unmarshal(raw, &c); err != nil || (c.Phase != phaseUsage && c.Phase != phaseCosts) {
		return cursor{}, provider.Invalid("cursor", "not a cursor of this source")
	}
	if c.Start != start.Unix() || c.End != end.Unix() {
		return cursor{}, provider.Invalid("cursor", "the cursor belongs to another window than [startAt, endAt)")
	}
	return c, nil
}

func encodeCursor(c cursor, start, end time.Time) string {
	c.Start, c.End = start.Unix(), end.Unix()
	b, _ := json.Marshal(c) // strings and numbers only
	return cursorEncoding.EncodeToString(b)
}

// maxCursor bounds a decoded cursor: the vendors' tokens are short.
const maxCursor = 4096
