package sources_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer/vendorusage/vendortest"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// vendorCase is one vendor's fake and the transport of its sources.
type vendorCase struct {
	transport string
	fake      func() *vendortest.Server
	// userA and userB are ids of persons the fake's users endpoint knows.
	userA, userB string
}

var vendorCases = []vendorCase{
	{sources.TransportOpenAI, vendortest.NewOpenAI, "user_ann", "user_bob"},
	{sources.TransportAnthropic, vendortest.NewAnthropic, "user_01ann", "user_01bob"},
}

// fillVendor gives the fake a week of usage and costs ending in the hour
// before now: two known persons, one id the users endpoint does not know,
// usage without a person, empty hours, two models, two projects, and a
// day's costs per project and line item.
func fillVendor(f *vendortest.Server, c vendorCase, now time.Time) {
	f.AddUser(c.userA, "Ann@Acme.test")
	f.AddUser(c.userB, "bob@acme.test")
	h := now.UTC().Truncate(time.Hour)
	for i := 1; i <= 6*24; i += 7 {
		at := h.Add(-time.Duration(i) * time.Hour)
		f.AddUsage(
			vendortest.Usage{Hour: at, Model: "model-large", User: c.userA, APIKey: "key_1", Project: "proj_a", Requests: 3,
				Uncached: 1000 + int64(i), CacheRead: 200, CacheWrite5m: 50, CacheWrite1h: 5, Output: 300},
			vendortest.Usage{Hour: at, Model: "model-small", User: c.userB, APIKey: "key_2", Project: "proj_b", Requests: 1,
				Uncached: 40, Output: 7},
			vendortest.Usage{Hour: at, Model: "model-small", User: "user_gone", Project: "proj_b", Requests: 2, Uncached: 11, Output: 2},
			vendortest.Usage{Hour: at, Model: "model-large", APIKey: "key_3", Requests: 1, Uncached: 5, CacheRead: 5, Output: 1},
		)
	}
	for d := range 6 {
		day := h.Add(-time.Duration(d) * 24 * time.Hour)
		f.AddCost(
			vendortest.Cost{Day: day, Project: "proj_a", LineItem: "model-large, input", Model: "model-large", USD: "1.10"},
			vendortest.Cost{Day: day, Project: "proj_a", LineItem: "model-large, output", Model: "model-large", USD: "2.2"},
			vendortest.Cost{Day: day, Project: "proj_b", LineItem: "model-small, input", Model: "model-small", USD: "0.000301"},
		)
	}
}

// orgUsage is the organisation's usage over [from, to) by day and userId,
// read through the API page by page.
type orgUsage struct {
	requests, input, output int64
	cost, daily             float64
	users                   map[string]bool
}

func readOrgUsage(t *testing.T, e *env, from, to time.Time) orgUsage {
	t.Helper()
	out := orgUsage{users: map[string]bool{}}
	q := url.Values{"startAt": {from.Format(time.RFC3339)}, "endAt": {to.Format(time.RFC3339)}, "granularity": {"day"},
		"groupBy": {"userId"}, "limit": {"7"}}
	for {
		var page spec.List[spec.UsageBucket]
		require.Equal(t, 200, get(t, e.url+"/organisations/"+e.org.ID+"/usage?"+q.Encode(), e.key, &page))
		for _, b := range page.Data {
			out.requests += b.Metrics.Requests
			out.input += b.Metrics.InputTokens
			out.output += b.Metrics.OutputTokens
			out.cost += b.Metrics.Cost
			if b.Metrics.DailyCost != nil {
				out.daily += *b.Metrics.DailyCost
			}
			if b.Dimensions.UserID != nil && *b.Dimensions.UserID != "" {
				out.users[*b.Dimensions.UserID] = true
			}
		}
		if !page.HasMore {
			return out
		}
		q.Set("cursor", *page.NextCursor)
	}
}

// requireTotals checks the organisation's usage against the fake's totals:
// tokens and requests exactly, the cost to a millionth of a dollar.
func requireTotals(t *testing.T, e *env, f *vendortest.Server, from, to time.Time) orgUsage {
	t.Helper()
	got := readOrgUsage(t, e, from, to)
	want := f.Totals(from, to)
	require.Equal(t, want.Requests, got.requests, "requests")
	require.Equal(t, want.Input, got.input, "input tokens")
	require.Equal(t, want.Output, got.output, "output tokens")
	require.InDelta(t, want.CostFloat(), got.cost, 1e-6, "cost")
	require.InDelta(t, want.CostFloat(), got.daily, 1e-6, "every cost is per day and project")
	return got
}

// syncedBy waits until the job queue has synced the source's usage after
// since, up to the hour before since: each window of a walk records a
// success, the last one the watermark of the latest hour.
func syncedBy(t *testing.T, e *env, id string, since time.Time) sources.Listed {
	t.Helper()
	var got sources.Listed
	require.Eventually(t, func() bool {
		list, err := e.src.Statuses(t.Context(), e.org.ID)
		require.NoError(t, err)
		for _, l := range list {
			if l.ID == id {
				got = l
				u := l.Resources["usage"]
				return u != nil && u.LastSuccess != nil && !u.InProgress && !u.LastSuccess.Before(since) &&
					u.Watermark != nil && !u.Watermark.Before(since.Truncate(time.Hour).Add(-time.Hour))
			}
		}
		return false
	}, 60*time.Second, 50*time.Millisecond, "the job syncs the source")
	return got
}

// TestVendorSources adds an OpenAI and an Anthropic source, lets the job
// queue sync them, and reads the organisation's usage through the API: its
// totals are the vendor's, persons are emails, only usage is synced; a
// revision of recent buckets synced again keeps the totals exact; a
// revoked key shows the vendor's message as the last error; the key is in
// no table and no log line.
func TestVendorSources(t *testing.T) {
	t.Parallel()
	for _, c := range vendorCases {
		t.Run(c.transport, func(t *testing.T) {
			t.Parallel()
			sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) { testVendorSource(t, db, c) })
		})
	}
}

func testVendorSource(t *testing.T, db *sqldb.DB, c vendorCase) {
	ctx := t.Context()
	logs := &syncBuffer{}
	e := newEnv(t, db, func(cfg *sources.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		cfg.VendorRate = 50
	})
	f := c.fake()
	t.Cleanup(f.Close)
	now := time.Now().UTC()
	fillVendor(f, c, now)

	src, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: c.transport, Transport: c.transport, URL: f.URL, Token: f.Key})
	require.NoError(t, err)
	require.Equal(t, sources.DefaultVendorEvery, src.Every, "synced hourly by default")
	require.Equal(t, c.transport, src.Transport)

	jobsCtx, stop := context.WithCancel(context.Background())
	defer stop()
	require.NoError(t, e.srv.Start(jobsCtx))
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.srv.Stop(sctx)
	}()
	listed := syncedBy(t, e, src.ID, src.CreatedAt)
	require.Len(t, listed.Resources, 1, "only usage is synced")
	require.Empty(t, listed.Resources["usage"].LastError)
	require.Positive(t, listed.Resources["usage"].Records)

	from := now.Truncate(24*time.Hour).AddDate(0, 0, -7)
	to := now.Truncate(24*time.Hour).AddDate(0, 0, 1)
	got := requireTotals(t, e, f, from, to)
	require.Equal(t, map[string]bool{"ann@acme.test": true, "bob@acme.test": true, vendorUnknownUser(c.transport): true}, got.users,
		"persons are the users' emails, lower-cased; an id the users endpoint does not know is labelled as the vendor's")

	// The vendor revises an hour of yesterday and today's costs; a second
	// sync replaces what it stored.
	revised := now.Truncate(time.Hour).Add(-8 * time.Hour)
	f.Revise(revised, vendortest.Usage{Model: "model-large", User: c.userB, Project: "proj_a", Requests: 9, Uncached: 123, Output: 45})
	f.ReviseCosts(now, vendortest.Cost{Project: "proj_a", LineItem: "model-large, input", Model: "model-large", USD: "7.000007"})
	_, err = e.src.SyncNow(ctx, src.ID)
	require.NoError(t, err)
	requireTotals(t, e, f, from, to)
	_, err = e.src.SyncNow(ctx, src.ID)
	require.NoError(t, err)
	requireTotals(t, e, f, from, to)

	// A revoked key: the sync fails, and the source's last error names the
	// vendor's answer, never the key.
	f.Revoke()
	_, syncErr := e.src.SyncNow(ctx, src.ID)
	require.Error(t, syncErr)
	list, err := e.src.Statuses(ctx, e.org.ID)
	require.NoError(t, err)
	lastErr := list[0].Resources["usage"].LastError
	require.Contains(t, lastErr, vendorTitle(c.transport)+" refused the Admin key")
	require.Contains(t, lastErr, vendorRevokedMessage(c.transport))
	require.Contains(t, syncErr.Error(), vendorRevokedMessage(c.transport), "Sync now shows it too")
	require.NotContains(t, lastErr, f.Key)
	require.NotContains(t, syncErr.Error(), f.Key)
	requireTotals(t, e, f, from, to) // nothing collected is lost
	var listed2 []map[string]any
	require.Equal(t, 200, get(t, e.url+"/organisations/"+e.org.ID+"/sources", e.key, &listed2))
	require.Contains(t, fmt.Sprint(listed2), vendorRevokedMessage(c.transport), "the API shows the vendor's answer")
	require.NotContains(t, fmt.Sprint(listed2), f.Key)

	requireKeyNowhere(t, db, f.Key)
	require.NotContains(t, logs.String(), f.Key, "the key is never logged")
	require.Contains(t, logs.String(), "source sync failed", "the log is written")
}

// requireKeyNowhere reads every text column of every table of the database:
// none holds key.
func requireKeyNowhere(t *testing.T, db *sqldb.DB, key string) {
	t.Helper()
	ctx := t.Context()
	q := `SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table'`
	if db.Dialect == sqldb.Postgres {
		q = `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()`
	}
	rows, err := db.QueryContext(ctx, q)
	require.NoError(t, err)
	var cols [][2]string
	for rows.Next() {
		var tbl, col string
		require.NoError(t, rows.Scan(&tbl, &col))
		cols = append(cols, [2]string{tbl, col})
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	require.Greater(t, len(cols), 20, "the tables are read")
	hits := 0
	for _, tc := range cols {
		cast := `CAST(` + quoteIdent(tc[1]) + ` AS TEXT)`
		var n int
		require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM `+quoteIdent(tc[0])+` WHERE `+cast+` LIKE $1`,
			"%"+key+"%").Scan(&n), tc)
		hits += n
		require.Zero(t, n, "the key is in %s.%s", tc[0], tc[1])
	}
	require.Zero(t, hits)
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func vendorTitle(transport string) string {
	if transport == sources.TransportAnthropic {
		return "Anthropic"
	}
	return "OpenAI"
}

func vendorUnknownUser(transport string) string {
	if transport == sources.TransportAnthropic {
		return "anthropic-account:user_gone"
	}
	return "openai-user:user_gone"
}

func vendorRevokedMessage(transport string) string {
	if transport == sources.TransportAnthropic {
		return "invalid x-api-key"
	}
	return "Incorrect API key provided"
}

// TestVendorSourceRedirect: a vendor address that redirects to another
// host fails the sync with that error, and the other host never sees the
// key.
func TestVendorSourceRedirect(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)
		f, other := vendortest.NewOpenAI(), vendortest.NewOpenAI()
		t.Cleanup(f.Close)
		t.Cleanup(other.Close)
		f.RedirectTo(strings.Replace(other.URL, "127.0.0.1", "localhost", 1))
		src, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "openai", Transport: sources.TransportOpenAI, URL: f.URL, Token: f.Key})
		require.NoError(t, err)
		_, err = e.src.SyncNow(ctx, src.ID)
		require.Error(t, err)
		require.Contains(t, err.Error(), "redirected the request to another address")
		require.Empty(t, other.Requests(), "the other host gets no request")
		list, err := e.src.Statuses(ctx, e.org.ID)
		require.NoError(t, err)
		require.Contains(t, list[0].Resources["usage"].LastError, "redirected")
	})
}

// TestVendorSourceValidation: the vendors' transports need a token, take
// the vendor's address by default and check a URL given like any source's.
func TestVendorSourceValidation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)
		_, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "o", Transport: sources.TransportOpenAI})
		require.ErrorIs(t, err, spec.ErrInvalid)
		require.ErrorContains(t, err, "token is required: the OpenAI Admin key")
		_, err = e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "o", Transport: sources.TransportAnthropic, URL: "ftp://x", Token: "k"})
		require.ErrorIs(t, err, spec.ErrInvalid)
		_, err = e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "o", Transport: "gemini", Token: "k"})
		require.ErrorContains(t, err, "transport must be rest, mcp, export, push, openai or anthropic")
		for tr, want := range map[string]string{sources.TransportOpenAI: "https://api.openai.com", sources.TransportAnthropic: "https://api.anthropic.com"} {
			s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: tr, Transport: tr, Token: "sk-admin-abcdefghijkl", Every: 2 * time.Hour})
			require.NoError(t, err)
			require.Equal(t, want, s.URL)
			require.Equal(t, 2*time.Hour, s.Every)
			require.Equal(t, "****ijkl", s.TokenHint())
		}
		// The restrictive policy checks the vendors' addresses too.
		strict := newEnv(t, db, func(cfg *sources.Config) { cfg.AllowPrivate = false })
		_, err = strict.src.Add(ctx, strict.org.ID, sources.SourceCreate{Name: "o", Transport: sources.TransportOpenAI,
			URL: "http://127.0.0.1:9", Token: "k"})
		require.ErrorIs(t, err, spec.ErrInvalid)
	})
}

// TestVendorHistoryConfig: Config.VendorBackfill sets how far back the
// first sync of a vendor source reads, and Config.VendorLookback the
// window later syncs read again, whole UTC days since the daily costs are
// re-read whole.
func TestVendorHistoryConfig(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db, func(cfg *sources.Config) {
			cfg.VendorRate, cfg.VendorBackfill, cfg.VendorLookback = 100, 3*24*time.Hour, 24*time.Hour
		})
		f := vendortest.NewOpenAI()
		t.Cleanup(f.Close)
		src, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "openai", Transport: sources.TransportOpenAI, URL: f.URL, Token: f.Key})
		require.NoError(t, err)

		// The earliest start_time asked for by the sync's usage requests.
		earliest := func(since time.Time) time.Time {
			var first time.Time
			for _, r := range f.Requests() {
				if r.At.Before(since) || !strings.HasSuffix(r.Path, "/usage/completions") || len(r.Query["start_time"]) == 0 {
					continue
				}
				sec, err := strconv.ParseInt(r.Query["start_time"][0], 10, 64)
				require.NoError(t, err)
				if at := time.Unix(sec, 0).UTC(); first.IsZero() || at.Before(first) {
					first = at
				}
			}
			return first
		}
		before := time.Now()
		_, err = e.src.SyncNow(ctx, src.ID)
		require.NoError(t, err)
		today := time.Now().UTC().Truncate(24 * time.Hour)
		require.Equal(t, today.AddDate(0, 0, -3), earliest(before), "the first sync reads VendorBackfill back, from a UTC midnight")

		before = time.Now()
		_, err = e.src.SyncNow(ctx, src.ID)
		require.NoError(t, err)
		require.Equal(t, today.AddDate(0, 0, -1), earliest(before), "a later sync reads VendorLookback again, from a UTC midnight")
	})
}
