package sources_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
	"github.com/aiusage/kit/spec/webhook"
)

// signed returns the headers of a delivery of body under id at ts.
func signed(t *testing.T, secret, id string, ts time.Time, body []byte) http.Header {
	t.Helper()
	sig, err := webhook.Sign(secret, id, ts, body)
	require.NoError(t, err)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(webhook.HeaderID, id)
	h.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(webhook.HeaderSignature, sig)
	return h
}

// post sends body with h to u and returns the status and answer.
func post(t *testing.T, u string, h http.Header, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func delivery(t *testing.T, resource string, records ...any) []byte {
	t.Helper()
	d := map[string]any{"type": "records", "resource": resource, "records": records}
	b, err := json.Marshal(d)
	require.NoError(t, err)
	return b
}

func TestAddPushSource(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		ctx := t.Context()
		for name, n := range map[string]sources.SourceCreate{
			"url without token": {Name: "x", URL: "https://vendor.example", Transport: "push"},
			"token without url": {Name: "x", Token: "t", Transport: "push"},
			"bad url":           {Name: "x", URL: "ftp://vendor.example", Token: "t", Transport: "push"},
			"no name":           {Transport: "push"},
		} {
			_, err := e.src.Add(ctx, e.org.ID, n)
			require.ErrorIs(t, err, spec.ErrInvalid, name)
		}
		s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "pushed", Transport: "push"})
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(s.PushSecret, "whsec_"))
		require.Equal(t, sources.DefaultReconcileEvery, s.Every)
		require.Equal(t, "/push/"+s.ID, sources.PushPath(s.ID))
		got, err := e.src.Get(ctx, e.org.ID, s.ID)
		require.NoError(t, err)
		require.Empty(t, got.PushSecret, "the secret is shown once, when added")
		b, err := json.Marshal(got)
		require.NoError(t, err)
		require.NotContains(t, string(b), s.PushSecret)
		// A push-only source has nothing to walk.
		_, err = e.src.SyncNow(ctx, s.ID)
		require.ErrorIs(t, err, spec.ErrInvalid)
		// Nor is it ever due for a walk.
		var queued []string
		scheduler, err := sources.New(ctx, sources.Config{DB: db, Orgs: e.orgs, Secrets: testRing,
			Jobs: enqueueFunc(func(_ context.Context, args river.JobArgs, _ *river.InsertOpts) error {
				queued = append(queued, args.(sources.SyncArgs).SourceID)
				return nil
			})})
		require.NoError(t, err)
		t.Cleanup(func() { _ = scheduler.Close() })
		_, err = scheduler.Schedule(ctx)
		require.NoError(t, err)
		require.NotContains(t, queued, s.ID)
	})
}

func TestPushReceiver(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		ctx := t.Context()
		s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "pushed", Transport: "push"})
		require.NoError(t, err)
		rest, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "rest", URL: "https://vendor.example", Token: "t"})
		require.NoError(t, err)
		u := e.url + sources.PushPath(s.ID)
		view := e.url + "/organisations/" + e.org.ID + "/sources/" + s.ID
		ds, err := demodata.Generate(demodata.Config{Conversations: 20, Seed: 3})
		require.NoError(t, err)
		convs := ds.FinalConversations()
		now := time.Now()

		body := delivery(t, "conversations", convs[0], convs[1], convs[2])
		code, answer := post(t, u, signed(t, s.PushSecret, "msg_1", now, body), body)
		require.Equal(t, http.StatusOK, code, answer)
		require.JSONEq(t, `{"saved":3,"quarantined":0}`, answer)
		require.Equal(t, 3, count(t, view, "conversations", e.key))

		// The same webhook-id again: accepted, nothing written.
		other := delivery(t, "conversations", convs[3])
		code, answer = post(t, u, signed(t, s.PushSecret, "msg_1", now, other), other)
		require.Equal(t, http.StatusOK, code, answer)
		require.JSONEq(t, `{"saved":0,"quarantined":0,"duplicate":true}`, answer)
		require.Equal(t, 3, count(t, view, "conversations", e.key))

		// Refused: nothing written, a 4xx naming the fault.
		wrongSecret := webhook.NewSecret()
		stale := signed(t, s.PushSecret, "msg_2", now.Add(-10*time.Minute), other)
		noID := signed(t, s.PushSecret, "msg_2", now, other)
		noID.Del(webhook.HeaderID)
		tampered := signed(t, s.PushSecret, "msg_2", now, other)
		big := bytes.Repeat([]byte(" "), sources.MaxPushBody+1)
		for name, c := range map[string]struct {
			url    string
			h      http.Header
			body   []byte
			status int
			says   string
		}{
			"wrong secret":     {u, signed(t, wrongSecret, "msg_2", now, other), other, 401, "signature"},
			"stale":            {u, stale, other, 401, "timestamp"},
			"no id":            {u, noID, other, 401, "webhook-id"},
			"tampered body":    {u, tampered, delivery(t, "conversations", convs[4]), 401, "signature"},
			"too large":        {u, signed(t, s.PushSecret, "msg_2", now, big), big, 413, "larger than"},
			"unknown source":   {e.url + "/push/00000000-0000-4000-8000-000000000000", signed(t, s.PushSecret, "msg_2", now, other), other, 404, "No push source"},
			"malformed source": {e.url + "/push/nope", signed(t, s.PushSecret, "msg_2", now, other), other, 404, "No push source"},
			"rest source":      {e.url + sources.PushPath(rest.ID), signed(t, s.PushSecret, "msg_2", now, other), other, 404, "No push source"},
		} {
			code, answer := post(t, c.url, c.h, c.body)
			require.Equal(t, c.status, code, name)
			require.Contains(t, answer, c.says, name)
		}
		for name, c := range map[string]struct {
			body string
			says string
		}{
			"not json":       {`{"type":`, "not a push delivery"},
			"two values":     {`{"type":"records","resource":"events","records":[{}]} {}`, "more than one"},
			"wrong type":     {`{"type":"other","resource":"events","records":[{}]}`, `type is \"other\"`},
			"type number":    {`{"type":1,"resource":"events","records":[{}]}`, "not a push delivery"},
			"bad resource":   {`{"type":"records","resource":"users","records":[{}]}`, `resource is \"users\"`},
			"no records":     {`{"type":"records","resource":"events","records":[]}`, "records is missing or empty"},
			"records object": {`{"type":"records","resource":"events","records":{}}`, "not a push delivery"},
			"too many":       {`{"type":"records","resource":"events","records":[` + strings.Repeat(`{},`, 1000) + `{}]}`, "at most 1000"},
		} {
			b := []byte(c.body)
			code, answer := post(t, u, signed(t, s.PushSecret, "msg_bad", now, b), b)
			require.Equal(t, http.StatusBadRequest, code, name)
			require.Contains(t, answer, c.says, name)
		}
		require.Equal(t, 3, count(t, view, "conversations", e.key))

		// Invalid records are quarantined, the valid ones of the same
		// delivery saved; so are usage buckets other than hourly by every
		// dimension.
		body = delivery(t, "events", map[string]any{"id": "ev-ok", "occurredAt": "2026-03-01T10:00:00.000Z"},
			map[string]any{"id": "ev-bad"}, 42)
		code, answer = post(t, u, signed(t, s.PushSecret, "msg_3", now, body), body)
		require.Equal(t, http.StatusOK, code, answer)
		require.JSONEq(t, `{"saved":1,"quarantined":2}`, answer)
		day := map[string]any{"startAt": "2026-03-01T00:00:00.000Z", "endAt": "2026-03-02T00:00:00.000Z", "granularity": "day",
			"dimensions": map[string]any{"model": "m", "assistantId": "a", "userId": "u", "department": "d"}, "metrics": map[string]any{"requests": 1}}
		hourFew := map[string]any{"startAt": "2026-03-01T00:00:00.000Z", "endAt": "2026-03-01T01:00:00.000Z", "granularity": "hour",
			"dimensions": map[string]any{"model": "m"}, "metrics": map[string]any{"requests": 1}}
		hour := map[string]any{"startAt": "2026-03-01T00:00:00.000Z", "endAt": "2026-03-01T01:00:00.000Z", "granularity": "hour",
			"dimensions": map[string]any{"model": "m", "assistantId": "a", "userId": "u", "department": "d"}, "metrics": map[string]any{"requests": 1}}
		body = delivery(t, "usage", day, hourFew, hour)
		code, answer = post(t, u, signed(t, s.PushSecret, "msg_4", now, body), body)
		require.Equal(t, http.StatusOK, code, answer)
		require.JSONEq(t, `{"saved":1,"quarantined":2}`, answer)
		var reasons []string
		require.NoError(t, e.src.Store().Quarantined(ctx, s.ID, func(q consumer.Quarantine) error {
			reasons = append(reasons, q.Reason)
			return nil
		}))
		require.Len(t, reasons, 4)
		require.Contains(t, strings.Join(reasons, "\n"), "pushed usage must be hourly")
		require.Contains(t, strings.Join(reasons, "\n"), "grouped by every dimension")

		// An older version pushed after a newer one changes nothing.
		newer := convs[0]
		newer.UpdatedAt = spec.NewTime(newer.UpdatedAt.Add(time.Hour))
		newer.Status = "newer"
		older := convs[0]
		older.Status = "older"
		for i, c := range []spec.Conversation{newer, older} {
			body = delivery(t, "conversations", c)
			code, answer = post(t, u, signed(t, s.PushSecret, fmt.Sprintf("msg_v%d", i), now, body), body)
			require.Equal(t, http.StatusOK, code, answer)
		}
		var got spec.Conversation
		require.Equal(t, http.StatusOK, get(t, view+"/conversations/"+convs[0].ID, e.key, &got))
		require.Equal(t, "newer", got.Status)

		// While a poller holds the lease, a push is 503 with Retry-After
		// and writes nothing.
		ok, err := e.src.Store().AcquireLease(ctx, consumer.Lease{Source: s.ID, Resource: consumer.Conversations, Owner: "poller",
			Now: now, Expires: now.Add(time.Minute)})
		require.NoError(t, err)
		require.True(t, ok)
		body = delivery(t, "conversations", convs[5])
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header = signed(t, s.PushSecret, "msg_busy", now, body)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		require.Equal(t, "5", resp.Header.Get("Retry-After"))
		require.Equal(t, 3, count(t, view, "conversations", e.key))
		require.NoError(t, e.src.Store().ReleaseLease(ctx, s.ID, consumer.Conversations, "poller"))
		// Its retry, under the same id, is written.
		code, answer = post(t, u, signed(t, s.PushSecret, "msg_busy", now, body), body)
		require.Equal(t, http.StatusOK, code, answer)
		require.Equal(t, 4, count(t, view, "conversations", e.key))
	})
}

// TestPushUsageVersions: a usage bucket has no updatedAt, so the asOf of
// its delivery versions it. A delivery read earlier than the one stored,
// or than the last reconciliation walk, arrives late and changes nothing; a
// later one replaces the count.
func TestPushUsageVersions(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		ctx := t.Context()
		s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "pushed", Transport: "push"})
		require.NoError(t, err)
		u := e.url + sources.PushPath(s.ID)
		now := time.Now().UTC()
		hour := now.Truncate(time.Hour)
		bucket := func(requests int) map[string]any {
			return map[string]any{"startAt": spec.NewTime(hour).String(), "endAt": spec.NewTime(hour.Add(time.Hour)).String(),
				"granularity": "hour", "dimensions": map[string]any{"model": "m", "assistantId": "", "userId": "u", "department": ""},
				"metrics": map[string]any{"requests": requests, "inputTokens": 1, "outputTokens": 1, "totalTokens": 2}}
		}
		send := func(id string, asOf time.Time, requests int) string {
			d := map[string]any{"type": "records", "resource": "usage", "asOf": spec.NewTime(asOf).String(), "records": []any{bucket(requests)}}
			body, err := json.Marshal(d)
			require.NoError(t, err)
			code, answer := post(t, u, signed(t, s.PushSecret, id, now, body), body)
			require.Equal(t, http.StatusOK, code, answer)
			return answer
		}
		requests := func() float64 {
			var page struct {
				Data []struct {
					Metrics map[string]float64 `json:"metrics"`
				} `json:"data"`
			}
			q := "/usage?granularity=hour&groupBy=model,assistantId,userId,department&startAt=" + spec.NewTime(hour).String() +
				"&endAt=" + spec.NewTime(hour.Add(time.Hour)).String()
			require.Equal(t, http.StatusOK, get(t, e.url+"/organisations/"+e.org.ID+"/sources/"+s.ID+q, e.key, &page))
			require.Len(t, page.Data, 1)
			return page.Data[0].Metrics["requests"]
		}

		require.JSONEq(t, `{"saved":1,"quarantined":0}`, send("msg_a", now.Add(-time.Minute), 5))
		require.Equal(t, 5.0, requests())
		// Read later: replaces.
		send("msg_b", now, 8)
		require.Equal(t, 8.0, requests())
		// Read earlier, arriving late: kept out.
		require.JSONEq(t, `{"saved":0,"quarantined":0}`, send("msg_c", now.Add(-30*time.Second), 6))
		require.Equal(t, 8.0, requests())
	})
}

// enqueueFunc is a riverjobs.Enqueuer of a function.
type enqueueFunc func(context.Context, river.JobArgs, *river.InsertOpts) error

func (f enqueueFunc) Enqueue(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) error {
	return f(ctx, args, opts)
}
