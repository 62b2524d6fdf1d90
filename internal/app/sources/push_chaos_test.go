package sources_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/provider/push"
	"github.com/aiusage/kit/spec"
	"github.com/aiusage/kit/spec/webhook"
)

// chaos stands between a pusher and the receiver and, at random, fails an
// attempt before the receiver sees it (500), after the receiver committed it
// (502, so the pusher sends it again under the same id), sends it twice under
// two ids (a pusher that queued the same records again), holds it and
// answers 200 (delivered later, after newer versions: reordered and delayed)
// or answers 200 and drops it (lost for good: only reconciliation finds its
// records).
type chaos struct {
	target, secret string
	mu             sync.Mutex
	rng            *rand.Rand
	held           [][]byte // delayed bodies, each with its id
	heldIDs        []string
	counts         map[string]int
}

func (c *chaos) forward(ctx context.Context, id string, body []byte) (int, error) {
	sig, err := webhook.Sign(c.secret, id, time.Now(), body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.target, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set(webhook.HeaderID, id)
	req.Header.Set(webhook.HeaderTimestamp, fmt.Sprint(time.Now().Unix()))
	req.Header.Set(webhook.HeaderSignature, sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func (c *chaos) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if webhook.Verify(c.secret, r.Header, body, time.Now(), 0) != nil {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	id := r.Header.Get(webhook.HeaderID)
	c.mu.Lock()
	roll := c.rng.Float64()
	c.mu.Unlock()
	note := func(kind string) {
		c.mu.Lock()
		c.counts[kind]++
		c.mu.Unlock()
	}
	switch {
	case roll < 0.15:
		note("failed before")
		w.WriteHeader(http.StatusInternalServerError)
		return
	case roll < 0.25:
		note("failed after")
		if code, err := c.forward(r.Context(), id, body); err != nil || code != http.StatusOK {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusBadGateway)
		return
	case roll < 0.35:
		note("duplicated")
		if code, err := c.forward(r.Context(), id+"_dup", body); err != nil || code != http.StatusOK {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
	case roll < 0.50:
		note("delayed")
		c.mu.Lock()
		c.held = append(c.held, body)
		c.heldIDs = append(c.heldIDs, id)
		c.mu.Unlock()
		return // 200
	case roll < 0.60:
		note("dropped")
		return // 200
	}
	code, err := c.forward(r.Context(), id, body)
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(code)
}

// release delivers the held bodies, newest first, so that old versions
// arrive after new ones.
func (c *chaos) release(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	held, ids := c.held, c.heldIDs
	c.held, c.heldIDs = nil, nil
	c.mu.Unlock()
	for i := len(held) - 1; i >= 0; i-- {
		code, err := c.forward(t.Context(), ids[i], held[i])
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
	}
}

// all walks a list and returns its records by id (usage: by bucket key).
func all(t *testing.T, base, path, key string) map[string]string {
	t.Helper()
	out := map[string]string{}
	cursor := ""
	for {
		u := base + path
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Data       []json.RawMessage `json:"data"`
			HasMore    bool              `json:"hasMore"`
			NextCursor string            `json:"nextCursor"`
		}
		require.Equal(t, http.StatusOK, get(t, u, key, &page), u)
		for _, rec := range page.Data {
			var k struct {
				ID         string          `json:"id"`
				StartAt    string          `json:"startAt"`
				Dimensions json.RawMessage `json:"dimensions"`
			}
			require.NoError(t, json.Unmarshal(rec, &k))
			id := k.ID
			if id == "" {
				id = k.StartAt + string(k.Dimensions)
			}
			_, dup := out[id]
			require.False(t, dup, "%s served twice by %s", id, base)
			out[id] = string(rec)
		}
		if !page.HasMore {
			return out
		}
		cursor = page.NextCursor
	}
}

// TestPushChaos pushes a provider's data, changed over several rounds,
// through deliveries failed, duplicated, reordered, delayed and dropped; a
// reconciliation walk then finds what was dropped, and the held deliveries
// arrive last, older than what is stored. The collected view ends equal to
// the provider's data, record for record.
func TestPushChaos(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)
		now := time.Now().UTC()
		src := memsource.New()
		require.NoError(t, demodata.Fill(ctx, demodata.Config{Conversations: 150, Seed: 11, End: now.Add(-2 * time.Hour)}, "acme", src))
		h, err := provider.NewHandler(src, provider.WithTokens(provider.Token{Secret: providerToken, Tenant: "acme"}))
		require.NoError(t, err)
		provSrv := httptest.NewServer(h)
		defer provSrv.Close()

		s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "pushed", Transport: sources.TransportPush,
			URL: provSrv.URL, Token: providerToken})
		require.NoError(t, err)
		ch := &chaos{target: e.url + sources.PushPath(s.ID), secret: s.PushSecret, rng: rand.New(rand.NewPCG(1, 2)), counts: map[string]int{}}
		chaosSrv := httptest.NewServer(ch)
		defer chaosSrv.Close()

		vendorDB := sqldbtest.Open(t, db.Dialect)
		p, err := push.New(ctx, push.Config{DatabaseURL: vendorDB.URL(), Source: src, Tenant: "acme", URL: chaosSrv.URL, Secret: s.PushSecret, MaxRecords: 7,
			RetryBase: 5 * time.Millisecond, RetryMax: 40 * time.Millisecond, MaxAttempts: 100, PollInterval: 20 * time.Millisecond})
		require.NoError(t, err)
		defer p.Close()
		require.NoError(t, p.Start(ctx))
		defer func() { _ = p.Stop(context.WithoutCancel(ctx)) }()

		rng := rand.New(rand.NewPCG(3, 4))
		for round := range 3 {
			if round > 0 {
				mutate(t, src, rng, round)
			}
			start := time.Now()
			_, err := p.Scan(ctx)
			require.NoError(t, err)
			wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			o, err := p.Wait(wctx, start, 20*time.Millisecond)
			cancel()
			require.NoError(t, err)
			require.Zero(t, o.GivenUp, "round %d", round)
		}
		t.Logf("faults: %v", ch.counts)
		for _, kind := range []string{"failed before", "failed after", "duplicated", "delayed", "dropped"} {
			require.Positive(t, ch.counts[kind], "the chaos never %s a delivery", kind)
		}

		// Reconciliation walks the provider's REST interface; then the held
		// deliveries arrive, older than what the walk stored.
		_, err = e.src.SyncNow(ctx, s.ID)
		require.NoError(t, err)
		ch.release(t)

		view := e.url + "/organisations/" + e.org.ID + "/sources/" + s.ID
		from := now.Add(-29 * 24 * time.Hour).Truncate(time.Hour).Format(time.RFC3339)
		until := now.Truncate(time.Hour).Add(time.Hour).Format(time.RFC3339)
		for _, path := range []string{"/conversations?limit=1000", "/assistants?limit=1000", "/events?limit=1000",
			"/usage?limit=1000&granularity=hour&groupBy=model,assistantId,userId,department&startAt=" + from + "&endAt=" + until} {
			want := all(t, provSrv.URL, path, providerToken)
			got := all(t, view, path, e.key)
			require.NotEmpty(t, want, path)
			require.Equal(t, len(want), len(got), path)
			for id, rec := range want {
				require.Contains(t, got, id, path)
				require.JSONEq(t, rec, got[id], "%s %s", path, id)
			}
		}
	})
}

// mutate changes the provider's data between rounds: conversations updated
// and deleted, assistants updated, events and usage added.
func mutate(t *testing.T, src *memsource.Source, rng *rand.Rand, round int) {
	t.Helper()
	ctx := t.Context()
	page, err := src.ListConversations(ctx, provider.ConversationQuery{Tenant: "acme", Limit: 1000})
	require.NoError(t, err)
	at := time.Now().UTC()
	for i, c := range page.Items {
		if c.Deleted() || rng.IntN(5) != 0 {
			continue
		}
		if i%3 == 0 {
			require.NoError(t, src.DeleteConversation(ctx, "acme", c.ID, at))
			continue
		}
		c.UpdatedAt = spec.NewTime(at)
		c.Status = fmt.Sprintf("round-%d", round)
		require.NoError(t, src.UpsertConversation(ctx, "acme", c))
	}
	asst, err := src.ListAssistants(ctx, provider.AssistantQuery{Tenant: "acme", Limit: 1000})
	require.NoError(t, err)
	for _, a := range asst.Items[:3] {
		a.UpdatedAt = spec.NewTime(at)
		a.Name = strings.TrimSuffix(a.Name, " (renamed)") + " (renamed)"
		require.NoError(t, src.UpsertAssistant(ctx, "acme", a))
	}
	for i := range 5 {
		require.NoError(t, src.AppendEvent(ctx, "acme", spec.Event{ID: fmt.Sprintf("chaos-%d-%d", round, i), OccurredAt: spec.NewTime(at)}))
		require.NoError(t, src.RecordUsage(ctx, "acme", provider.UsageRecord{ID: fmt.Sprintf("chaos-%d-%d", round, i), At: at,
			UserID: "u-chaos", Model: "gpt-chaos", InputTokens: 10, OutputTokens: 5, Cost: 0.01}))
	}
}
