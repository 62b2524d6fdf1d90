package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// Config configures a [Poller]. Only Source is required; every other field
// has the default its comment names.
type Config struct {
	// Source names the provider: the records, checkpoints and leases of the
	// store are kept under this name. Required.
	Source string
	// Resources lists what to sync. Default: all four, in the order of
	// [Resources].
	Resources []Resource
	// Owner identifies this poller in leases. Default: host name, process id
	// and a random suffix.
	Owner string
	// PageSize is the limit asked for per page. Default 1000 (the largest the
	// kit's provider serves).
	PageSize int
	// Lookback is subtracted from the watermark for the incremental filter,
	// so a record committed late by the provider is not missed. Default 5m.
	Lookback time.Duration
	// UsageGranularity is the granularity of the usage buckets collected:
	// "hour" (default) or "day".
	UsageGranularity string
	// UsageGroupBy lists the dimensions usage is collected by. nil means all
	// four (model, assistantId, userId, department), the finest series, from
	// which the collected view derives coarser ones; an empty non-nil slice
	// collects ungrouped totals.
	UsageGroupBy []string
	// UsageTrailing is the trailing window of usage re-pulled by every sync,
	// because a provider's recent buckets still change. Default 48h.
	UsageTrailing time.Duration
	// UsageBackfill is how far back the first sync of usage reaches.
	// Default 30 days.
	UsageBackfill time.Duration
	// UsageAlign is the alignment of the usage windows: the start of every
	// window read, backfill and trailing alike, is truncated to it in UTC,
	// and so is the end of every window but the last. Default: one bucket
	// of UsageGranularity. A source whose buckets span more than the
	// granularity (a vendor's daily costs placed on an hourly bucket) sets
	// it to that span, so each of its windows holds such buckets whole. It
	// must be a whole number of buckets, at most UsageWindow, and divide a
	// day evenly or be a whole number of days.
	UsageAlign time.Duration
	// UsageWindow is the longest range asked for in one usage walk. Default
	// 7 days, within every limit the kit's provider sets.
	UsageWindow time.Duration
	// LeaseTTL is how long a lease lasts without renewal; the poller renews
	// it with every page. Default 2m. A lease held by a process of this host
	// that no longer runs (a killed sync) is taken over at once.
	LeaseTTL time.Duration
	// FullEvery is how often conversations and assistants are re-pulled in
	// full even though the provider offers incremental sync, so that
	// records it deleted without a tombstone (a removed assistant) are
	// marked missing (events, an append-only trail, are not);
	// also how long a missing sync feature is believed before an
	// incremental walk is tried again. Default 24h; negative means never.
	FullEvery time.Duration
	// MaxRestarts bounds how often a walk starts over after the provider
	// rejects its cursor (an expired or rotated cursor key). Default 3.
	MaxRestarts int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives debug lines about walks; default: nothing is logged.
	// Errors are returned, not logged.
	Logger *slog.Logger
	// OnPage, when set, is called after each committed page.
	OnPage func(PageProgress)
	// ErrorText, when set, turns the error of a failed resource into the
	// text recorded as its checkpoint's LastError (what [Store.Status]
	// shows). Default: the error's own text. A service whose status is read
	// by others than its operator records a classified text instead, so that
	// a provider's own words (or a remote server's) do not reach them.
	ErrorText func(error) string
}

// PageProgress reports a committed page.
type PageProgress struct {
	Source      string
	Resource    Resource
	Full        bool // the walk is a full re-pull
	Page        int  // 1 for the first page of this sync
	Records     int  // stored from this page
	Quarantined int  // quarantined from this page
	Total       int  // records stored by this sync of the resource so far
}

// Result is what one [Poller.SyncOnce] did.
type Result struct {
	Resources []ResourceResult
}

// Records is the number of records stored over every resource.
func (r Result) Records() int {
	n := 0
	for _, x := range r.Resources {
		n += x.Records
	}
	return n
}

// ResourceResult is what one sync did for one resource.
type ResourceResult struct {
	Resource    Resource
	Pages       int
	Records     int
	Quarantined int
	// Walks counts the walks; Full those that were full re-pulls.
	Walks, Full int
	// Restarts counts walks started over after a rejected cursor.
	Restarts int
	// NeedsFull and Reason report a sync feature the provider lacks.
	NeedsFull bool
	Reason    string
	// Skipped says why nothing was synced: another poller holds the lease,
	// the lease was lost, or the provider does not offer the resource.
	Skipped  string
	Duration time.Duration
	Err      error
}

// Poller syncs one provider (a [Source]) into a [Store]: per resource a
// cursor walk whose pages commit with their checkpoint, incremental with
// updatedSince/occurredAfter once a watermark exists, a full re-pull where
// the provider lacks a sync feature, and a trailing window of usage.
type Poller struct {
	src   Source
	store Store
	cfg   Config
}

// NewPoller returns a Poller for src and store, or an error naming the bad
// field of cfg.
func NewPoller(src Source, store Store, cfg *Config) (*Poller, error) {
	if src == nil || store == nil {
		return nil, errors.New("consumer: NewPoller: nil Source or Store")
	}
	if cfg == nil {
		return nil, errors.New("consumer: NewPoller: nil Config (Source is required)")
	}
	c := *cfg
	if strings.TrimSpace(c.Source) == "" {
		return nil, errors.New("consumer: Config.Source is required")
	}
	if len(c.Source) > 200 {
		return nil, errors.New("consumer: Config.Source is longer than 200 bytes")
	}
	if c.Resources == nil {
		c.Resources = Resources
	}
	c.Resources = slices.Clone(c.Resources)
	for _, r := range c.Resources {
		if _, err := ParseResource(string(r)); err != nil {
			return nil, fmt.Errorf("consumer: Config.Resources: %w", err)
		}
	}
	if c.Owner == "" {
		c.Owner = defaultOwner()
	}
	if c.PageSize == 0 {
		c.PageSize = 1000
	}
	if c.PageSize < 1 || c.PageSize > 1000 {
		return nil, fmt.Errorf("consumer: Config.PageSize %d is outside 1..1000", c.PageSize)
	}
	defaults := []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{
		{"Lookback", &c.Lookback, 5 * time.Minute},
		{"UsageTrailing", &c.UsageTrailing, 48 * time.Hour},
		{"UsageBackfill", &c.UsageBackfill, 30 * 24 * time.Hour},
		{"UsageWindow", &c.UsageWindow, 7 * 24 * time.Hour},
		{"LeaseTTL", &c.LeaseTTL, 2 * time.Minute},
	}
	if c.FullEvery == 0 {
		c.FullEvery = 24 * time.Hour
	}
	for _, d := range defaults {
		if *d.d < 0 {
			return nil, fmt.Errorf("consumer: Config.%s must not be negative", d.name)
		}
		if *d.d == 0 {
			*d.d = d.def
		}
	}
	if c.UsageGranularity == "" {
		c.UsageGranularity = spec.GranularityHour
	}
	g := granularity(c.UsageGranularity)
	if g == 0 {
		return nil, fmt.Errorf("consumer: Config.UsageGranularity %q is neither hour nor day", c.UsageGranularity)
	}
	if c.UsageWindow < g {
		return nil, fmt.Errorf("consumer: Config.UsageWindow %s is shorter than one %s", c.UsageWindow, c.UsageGranularity)
	}
	if err := checkAlign(&c, g); err != nil {
		return nil, err
	}
	if c.UsageGroupBy == nil {
		c.UsageGroupBy = slices.Clone(spec.Dimensions)
	} else {
		var ordered []string
		for _, d := range spec.Dimensions {
			if slices.Contains(c.UsageGroupBy, d) {
				ordered = append(ordered, d)
			}
		}
		for _, d := range c.UsageGroupBy {
			if !slices.Contains(spec.Dimensions, d) {
				return nil, fmt.Errorf("consumer: Config.UsageGroupBy: unknown dimension %q", d)
			}
		}
		c.UsageGroupBy = append([]string{}, ordered...)
	}
	if c.MaxRestarts == 0 {
		c.MaxRestarts = 3
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return &Poller{src: src, store: store, cfg: c}, nil
}

// checkAlign defaults and checks c.UsageAlign for buckets of g.
func checkAlign(c *Config, g time.Duration) error {
	const day = 24 * time.Hour
	if c.UsageAlign == 0 {
		c.UsageAlign = g
	}
	a := c.UsageAlign
	switch {
	case a < 0:
		return errors.New("consumer: Config.UsageAlign must not be negative")
	case a%g != 0:
		return fmt.Errorf("consumer: Config.UsageAlign %s is not a whole number of %s buckets", a, c.UsageGranularity)
	case a > c.UsageWindow:
		return fmt.Errorf("consumer: Config.UsageAlign %s is longer than UsageWindow %s", a, c.UsageWindow)
	case a < day && day%a != 0, a > day && a%day != 0:
		return fmt.Errorf("consumer: Config.UsageAlign %s neither divides a day nor is a whole number of days", a)
	}
	return nil
}

func granularity(g string) time.Duration {
	switch g {
	case spec.GranularityHour:
		return time.Hour
	case spec.GranularityDay:
		return 24 * time.Hour
	}
	return 0
}

// Run syncs every interval until ctx ends, then returns nil. A failed sync
// is reported through onSync (when not nil) and retried at the next tick;
// Run itself fails only for a non-positive interval.
func (p *Poller) Run(ctx context.Context, every time.Duration, onSync func(Result, error)) error {
	if every <= 0 {
		return errors.New("consumer: Run: the interval must be positive")
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		res, err := p.SyncOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if onSync != nil {
			onSync(res, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// SyncOnce syncs every configured resource once, one after the other. A
// resource whose lease another poller holds is skipped. The error joins the
// failures of the resources; each is also in its ResourceResult.
func (p *Poller) SyncOnce(ctx context.Context) (Result, error) {
	var res Result
	var errs []error
	for _, r := range p.cfg.Resources {
		rr := p.syncResource(ctx, r)
		res.Resources = append(res.Resources, rr)
		if rr.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r, rr.Err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, errors.Join(errs...)
}

// run is the state of one resource's sync.
type run struct {
	p         *Poller
	r         Resource
	lease     Lease
	renewedAt time.Time
	res       *ResourceResult
}

func (p *Poller) syncResource(ctx context.Context, r Resource) (rr ResourceResult) {
	rr.Resource = r
	start := p.cfg.Now()
	defer func() { rr.Duration = p.cfg.Now().Sub(start) }()
	now := p.cfg.Now()
	l := Lease{Source: p.cfg.Source, Resource: r, Owner: p.cfg.Owner, Now: now, Expires: now.Add(p.cfg.LeaseTTL)}
	ok, err := p.store.AcquireLease(ctx, l)
	if err != nil {
		rr.Err = fmt.Errorf("acquire lease: %w", err)
		return rr
	}
	if !ok {
		holder, held, err := p.store.LeaseHolder(ctx, p.cfg.Source, r)
		if err != nil {
			rr.Err = fmt.Errorf("read lease: %w", err)
			return rr
		}
		if held && ownerDead(holder.Owner) {
			// A sync of this host that was killed: take its lease over.
			l.TakeOver = holder.Owner
			if ok, err = p.store.AcquireLease(ctx, l); err != nil {
				rr.Err = fmt.Errorf("acquire lease: %w", err)
				return rr
			}
			l.TakeOver = ""
		}
		if !ok {
			rr.Skipped = "another poller holds the lease"
			if held {
				rr.Skipped = fmt.Sprintf("another poller (%s) holds the lease until %s", holder.Owner, holder.Expires.UTC().Format(time.RFC3339))
			}
			return rr
		}
	}
	defer func() {
		// Release with a context of its own: ctx may be done already.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = p.store.ReleaseLease(rctx, p.cfg.Source, r, p.cfg.Owner)
	}()
	st := &run{p: p, r: r, lease: l, renewedAt: now, res: &rr}
	if r == Usage {
		err = st.syncUsage(ctx)
	} else {
		err = st.syncList(ctx)
	}
	switch {
	case err == nil:
	case errors.Is(err, ErrLeaseLost):
		rr.Skipped = "the lease was lost to another poller"
	case errors.Is(err, provider.ErrUnsupported) || errors.Is(err, provider.ErrNotFound):
		rr.Skipped = "the provider does not offer " + string(r)
		p.recordFailure(ctx, r, NotOfferedPrefix+p.errorText(err))
	default:
		rr.Err = err
		if ctx.Err() == nil {
			p.recordFailure(ctx, r, p.errorText(err))
		}
	}
	return rr
}

func (p *Poller) errorText(err error) string {
	if p.cfg.ErrorText != nil {
		return p.cfg.ErrorText(err)
	}
	return err.Error()
}

func (p *Poller) recordFailure(ctx context.Context, r Resource, msg string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = p.store.RecordFailure(rctx, p.cfg.Source, r, p.cfg.Now(), msg)
}

// leaseFor returns the lease to commit with, extended from now.
func (s *run) leaseFor() Lease {
	now := s.p.cfg.Now()
	l := s.lease
	l.Now = now
	l.Expires = now.Add(s.p.cfg.LeaseTTL)
	s.renewedAt = now
	return l
}

// renew extends the lease when a third of its time has passed without a
// commit (a slow page, retries), or reports ErrLeaseLost.
func (s *run) renew(ctx context.Context) error {
	if s.p.cfg.Now().Sub(s.renewedAt) < s.p.cfg.LeaseTTL/3 {
		return nil
	}
	ok, err := s.p.store.AcquireLease(ctx, s.leaseFor())
	if err != nil {
		return fmt.Errorf("renew lease: %w", err)
	}
	if !ok {
		return ErrLeaseLost
	}
	return nil
}

// syncList syncs conversations, assistants or events.
func (s *run) syncList(ctx context.Context) error {
	cp, err := s.p.store.Checkpoint(ctx, s.p.cfg.Source, s.r)
	if err != nil {
		return fmt.Errorf("read checkpoint: %w", err)
	}
	resumed := cp.InProgress
	var followSince *time.Time // where the walk that follows a resumed one starts
	for {
		if !cp.InProgress {
			s.startWalk(&cp, followSince)
			followSince = nil
		}
		wasFull := cp.Full
		needed := cp.NeedsFull
		err := s.walk(ctx, &cp, resumed)
		if errors.Is(err, errFilterRejected) {
			// The provider refuses the incremental filter: re-pull in full.
			s.needsFull(&cp, "the provider rejects the "+filterName(s.r)+" filter")
			cp.InProgress = false
			resumed = false
			continue
		}
		if err != nil {
			return err
		}
		if resumed && !wasFull {
			// The incremental walk was interrupted (a crash, an error) and
			// finished now from its checkpoint: records committed late
			// meanwhile may sit behind its cursor. Walk again from its
			// filter. (After a resumed full walk, the next walk reaches
			// back to that walk's start instead; see startWalk.)
			resumed = false
			since := cp.Since
			followSince = &since
			continue
		}
		resumed = false
		// A walk that discovered a missing sync feature was not a full
		// re-pull: follow it with one, so deletions show at once.
		if !wasFull && cp.NeedsFull && !needed {
			continue
		}
		return nil
	}
}

// errFilterRejected is a 400 to the first page of an incremental walk.
var errFilterRejected = errors.New("the provider rejected the incremental filter")

// startWalk begins a new walk in cp: a full re-pull when there is no
// watermark yet, the provider lacks a sync feature, or the last full walk
// is older than FullEvery; otherwise an incremental walk from a lookback
// before the newest record seen and before the start of the previous walk
// (so a record the provider committed late, while that walk was past its
// position, is read again), or from follow when that is earlier.
func (s *run) startWalk(cp *Checkpoint, follow *time.Time) {
	cfg := s.p.cfg
	now := cfg.Now().UTC()
	previous := cp.Started
	cp.Run++
	cp.InProgress = true
	cp.Cursor = ""
	cp.Pages, cp.Records = 0, 0
	cp.Started = now
	if cp.NeedsFull && cfg.FullEvery > 0 && !cp.NeedsFullSince.IsZero() && now.Sub(cp.NeedsFullSince) >= cfg.FullEvery {
		// Try incremental again: the provider may have gained the
		// feature. A walk that finds it still missing says so again and
		// is followed by a full one.
		cp.NeedsFull, cp.NeedsFullReason, cp.NeedsFullSince = false, "", time.Time{}
	}
	// Events are an append-only audit trail: a periodic full re-pull would
	// only mark those a provider's retention dropped as missing.
	due := s.r != Events && cfg.FullEvery > 0 && !cp.LastFull.IsZero() && now.Sub(cp.LastFull) >= cfg.FullEvery
	cp.Full = cp.NeedsFull || cp.Watermark.IsZero() || due
	cp.Since = time.Time{}
	if cp.Full {
		return
	}
	cp.Since = cp.Watermark.Add(-cfg.Lookback)
	if !previous.IsZero() {
		if t := previous.Add(-cfg.Lookback); t.Before(cp.Since) {
			cp.Since = t
		}
	}
	if follow != nil && follow.Before(cp.Since) {
		cp.Since = *follow
	}
}

// walk follows one list walk to its end, committing each page with its
// checkpoint.
func (s *run) walk(ctx context.Context, cp *Checkpoint, resumed bool) error {
	s.res.Walks++
	if cp.Full {
		s.res.Full++
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.p.cfg.Logger.Debug("walk", "source", s.p.cfg.Source, "resource", s.r, "run", cp.Run, "full", cp.Full, "since", cp.Since, "resume", resumed && cp.Cursor != "")
	query := func(cursor string) Query {
		q := Query{Cursor: cursor, Limit: s.p.cfg.PageSize}
		if s.r == Events {
			q.OccurredAfter = cp.Since
		} else {
			q.UpdatedSince = cp.Since
		}
		return q
	}
	parse := func(raw json.RawMessage) parsed { return parseRecord(s.r, raw) }
	for it := range s.pipeline(wctx, query, cp.Cursor, parse) {
		if it.err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if it.firstPage && !cp.Since.IsZero() && errors.Is(it.err, provider.ErrInvalid) {
				return fmt.Errorf("%w: %v", errFilterRejected, it.err)
			}
			return it.err
		}
		if it.restarted {
			s.res.Restarts++
		}
		if !it.page.Paginated {
			s.needsFull(cp, "the provider does not paginate with cursors")
		}
		if err := s.renew(ctx); err != nil {
			return err
		}
		w := PageWrite{}
		for i, pr := range it.parsed {
			if pr.reason != "" {
				w.Quarantine = append(w.Quarantine, Quarantine{Source: s.p.cfg.Source, Resource: s.r, ID: pr.id, Reason: pr.reason, At: s.p.cfg.Now(), JSON: it.page.Records[i]})
				continue
			}
			if pr.noUpdatedAt {
				s.needsFull(cp, "records carry no updatedAt")
			}
			// Compared at the provider's own precision: a filter sent in
			// milliseconds is met by 10:55:00.000456 > 10:55:00.000.
			if !cp.Since.IsZero() && (pr.exact.Before(cp.Since) || (s.r == Events && pr.exact.Equal(cp.Since))) {
				s.needsFull(cp, "the provider ignores the "+filterName(s.r)+" filter")
			}
			if pr.rec.Time.After(cp.Watermark) {
				cp.Watermark = pr.rec.Time
			}
			w.Records = append(w.Records, pr.rec)
		}
		cp.Pages++
		cp.Records += int64(len(w.Records))
		cp.Cursor = ""
		if it.more {
			cp.Cursor = it.page.NextCursor
		}
		done := !it.more
		if !done {
			if err := s.save(ctx, cp, w); err != nil {
				return err
			}
			continue
		}
		s.finish(cp)
		if !cp.Full {
			return s.save(ctx, cp, w)
		}
		// The last page of a full walk commits with the sweep: records
		// the walk did not see are marked missing.
		cp.LastFull = cp.LastSuccess
		end := RunEnd{Lease: s.leaseFor(), At: s.p.cfg.Now(), Page: w, Sweep: true, Checkpoint: *cp}
		if err := s.p.store.EndRun(ctx, end); err != nil {
			return fmt.Errorf("end run: %w", err)
		}
		s.counted(cp, w)
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("the walk ended without its last page") // unreachable: the pipeline ends with a last page or an error
}

// save commits a page with checkpoint cp and reports it.
func (s *run) save(ctx context.Context, cp *Checkpoint, w PageWrite) error {
	w.Lease = s.leaseFor()
	w.Checkpoint = *cp
	if err := s.p.store.SavePage(ctx, w); err != nil {
		return fmt.Errorf("save page: %w", err)
	}
	s.counted(cp, w)
	return nil
}

// counted adds a committed page to the result and reports it.
func (s *run) counted(cp *Checkpoint, w PageWrite) {
	s.res.Pages++
	s.res.Records += len(w.Records)
	s.res.Quarantined += len(w.Quarantine)
	if s.p.cfg.OnPage != nil {
		s.p.cfg.OnPage(PageProgress{Source: s.p.cfg.Source, Resource: s.r, Full: cp.Full, Page: s.res.Pages,
			Records: len(w.Records), Quarantined: len(w.Quarantine), Total: s.res.Records})
	}
}

func filterName(r Resource) string {
	if r == Events {
		return "occurredAfter"
	}
	return "updatedSince"
}

// finish marks the walk of cp complete.
func (s *run) finish(cp *Checkpoint) {
	cp.InProgress = false
	cp.Cursor = ""
	cp.LastSuccess = s.p.cfg.Now().UTC()
	cp.LastError = ""
	cp.LastErrorAt = time.Time{}
}

func (s *run) needsFull(cp *Checkpoint, reason string) {
	if !cp.NeedsFull {
		cp.NeedsFull = true
		cp.NeedsFullReason = reason
		cp.NeedsFullSince = s.p.cfg.Now().UTC()
	}
	s.res.NeedsFull = true
	s.res.Reason = cp.NeedsFullReason
}

// syncUsage re-pulls usage window by window: the first sync from
// UsageBackfill ago, later ones from the older of the watermark and the
// trailing window (each truncated to UsageAlign), up to the bucket holding
// now. Each window's walk ends with a sweep of the buckets it no longer
// holds.
func (s *run) syncUsage(ctx context.Context) error {
	cfg := s.p.cfg
	cp, err := s.p.store.Checkpoint(ctx, cfg.Source, Usage)
	if err != nil {
		return fmt.Errorf("read checkpoint: %w", err)
	}
	g := granularity(cfg.UsageGranularity)
	now := cfg.Now().UTC()
	end := now.Truncate(g).Add(g)
	if cp.InProgress && !cp.Until.After(cp.Since) {
		cp.InProgress = false // a checkpoint from another configuration
	}
	if cp.InProgress {
		if err := s.usageWindow(ctx, &cp, g, now); err != nil {
			return err
		}
	}
	var from time.Time
	a := cfg.UsageAlign
	if cp.Watermark.IsZero() {
		from = now.Add(-cfg.UsageBackfill).Truncate(a)
	} else {
		from = now.Add(-cfg.UsageTrailing).Truncate(a)
		if w := cp.Watermark.Truncate(a); w.Before(from) {
			from = w
		}
	}
	for ws := from; ws.Before(end); {
		we := ws.Add(cfg.UsageWindow).Truncate(a)
		if we.After(end) {
			we = end
		}
		cp.Run++
		cp.InProgress = true
		cp.Cursor = ""
		cp.Full = true
		cp.Since, cp.Until = ws, we
		cp.Pages, cp.Records = 0, 0
		if err := s.usageWindow(ctx, &cp, g, now); err != nil {
			return err
		}
		ws = we
	}
	return nil
}

// usageWindow walks the window [cp.Since, cp.Until) of cp's run.
func (s *run) usageWindow(ctx context.Context, cp *Checkpoint, g time.Duration, now time.Time) error {
	cfg := s.p.cfg
	s.res.Walks++
	s.res.Full++
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	query := func(cursor string) Query {
		return Query{Cursor: cursor, Limit: cfg.PageSize, StartAt: cp.Since, EndAt: cp.Until,
			Granularity: cfg.UsageGranularity, GroupBy: cfg.UsageGroupBy}
	}
	parse := func(raw json.RawMessage) parsed {
		pr := parseRecord(Usage, raw)
		if pr.reason == "" {
			pr.reason = s.checkBucket(pr.rec.Bucket, cp, g)
		}
		return pr
	}
	for it := range s.pipeline(wctx, query, cp.Cursor, parse) {
		if it.err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return it.err
		}
		if it.restarted {
			s.res.Restarts++
		}
		if err := s.renew(ctx); err != nil {
			return err
		}
		w := PageWrite{}
		for i, pr := range it.parsed {
			if pr.reason != "" {
				w.Quarantine = append(w.Quarantine, Quarantine{Source: cfg.Source, Resource: Usage, ID: pr.id, Reason: pr.reason, At: cfg.Now(), JSON: it.page.Records[i]})
				continue
			}
			w.Records = append(w.Records, pr.rec)
		}
		cp.Pages++
		cp.Records += int64(len(w.Records))
		cp.Cursor = ""
		if it.more {
			cp.Cursor = it.page.NextCursor
			if err := s.save(ctx, cp, w); err != nil {
				return err
			}
			continue
		}
		// The window is complete: sweep what it no longer holds, and move
		// the watermark to its end (never past the bucket holding now).
		s.finish(cp)
		wm := cp.Until
		if cur := now.Truncate(g); wm.After(cur) {
			wm = cur
		}
		if wm.After(cp.Watermark) {
			cp.Watermark = wm
		}
		end := RunEnd{Lease: s.leaseFor(), At: cfg.Now(), Page: w, Sweep: true, SweepFrom: cp.Since, SweepUntil: cp.Until, Checkpoint: *cp}
		if err := s.p.store.EndRun(ctx, end); err != nil {
			return fmt.Errorf("end run: %w", err)
		}
		s.counted(cp, w)
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("the usage walk ended without its last page")
}

// checkBucket returns why a bucket does not belong to the window asked
// for, or "".
func (s *run) checkBucket(b *BucketKey, cp *Checkpoint, g time.Duration) string {
	cfg := s.p.cfg
	switch {
	case b.Granularity != "" && b.Granularity != cfg.UsageGranularity:
		return fmt.Sprintf("/granularity: %q, but %q was asked for", b.Granularity, cfg.UsageGranularity)
	case b.Start.Before(cp.Since) || !b.Start.Before(cp.Until):
		return fmt.Sprintf("/startAt: %s lies outside the range asked for [%s, %s)", b.Start.Format(millisLayout), cp.Since.Format(millisLayout), cp.Until.Format(millisLayout))
	case !b.Start.Truncate(g).Equal(b.Start):
		return fmt.Sprintf("/startAt: %s is not on a UTC %s boundary", b.Start.Format(millisLayout), cfg.UsageGranularity)
	}
	for _, d := range b.Grouped {
		if !slices.Contains(cfg.UsageGroupBy, d) {
			return fmt.Sprintf("/dimensions/%s: present, but usage was not grouped by it", d)
		}
	}
	return ""
}
