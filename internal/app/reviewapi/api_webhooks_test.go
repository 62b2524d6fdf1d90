package reviewapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/webhooktest"
	"github.com/aiusage/kit/spec"
	"github.com/aiusage/kit/spec/webhook"
)

func TestAPIWebhookStandardTestVector(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	for _, c := range []struct{ name, id, ts, body, sig string }{
		// The Standard Webhooks specification's vector.
		{"standard webhooks vector", "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", `{"test": 2432232314}`, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
		// The worked example of spec/openapi/review.yaml.
		{"review.yaml example", "msg_2b1c9f0e4d8a4e7f9c3b6a5d", "1772442843",
			`{"type":"task.created","timestamp":"2026-03-02T09:14:03.120Z","data":{"id":"1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b","status":"pending","createdAt":"2026-03-02T09:14:03.120Z"}}`,
			"v1,hyBLlWLPVuOfCEESBZFCdv4L2beI5B7mtwaxopVLop4="},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("webhook-id", c.id)
			h.Set("webhook-timestamp", c.ts)
			h.Set("webhook-signature", c.sig)
			require.NoError(t, webhooktest.Verify(secret, h, []byte(c.body)), c.id)
			// Among other signatures, as while a secret is rotated.
			h.Set("webhook-signature", "v1,bm90IGl0 "+c.sig)
			require.NoError(t, webhooktest.Verify(secret, h, []byte(c.body)), c.id)

			// The service signs the same.
			sec, err := strconv.ParseInt(c.ts, 10, 64)
			require.NoError(t, err)
			sig, err := webhook.Sign(secret, c.id, time.Unix(sec, 0), []byte(c.body))
			require.NoError(t, err)
			require.Equal(t, c.sig, sig)

			// Any change breaks it.
			require.ErrorIs(t, webhooktest.Verify(secret, h, []byte(c.body+" ")), webhooktest.ErrBadSignature)
			h.Set("webhook-signature", c.sig)
			h.Set("webhook-timestamp", "1614265331")
			require.ErrorIs(t, webhooktest.Verify(secret, h, []byte(c.body)), webhooktest.ErrBadSignature)
			h.Set("webhook-timestamp", c.ts)
			require.ErrorIs(t, webhooktest.Verify("whsec_"+base64.StdEncoding.EncodeToString([]byte("another key")), h, []byte(c.body)), webhooktest.ErrBadSignature)
		})
	}
}

func TestAPIWebhookEveryEventSigned(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		rcv := webhooktest.NewReceiver(t, "")
		hook := tn.register(t, rcv)
		require.Equal(t, spec.WebhookEventTypes, hook.Events, "all four when events is omitted")
		svc := h.service()

		approved := tn.submit(t, "hello")
		decided := tn.submit(t, "Project Falcon")
		timedOut := tn.submit(t, "Project Falcon")
		h.clock.Advance(time.Hour)
		_, err := tn.decide(decided.ID, reviewapi.DecisionReject, "no")
		require.NoError(t, err)
		h.clock.Advance(24 * time.Hour)
		n, err := svc.SweepTimeouts(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)

		acks := waitAcks(t, rcv, 9)
		require.Len(t, acks, 9)
		ids := map[string]bool{}
		for _, a := range acks {
			// The receiver verified it; verify again, with both verifiers.
			require.NoError(t, a.Err)
			require.NoError(t, webhooktest.Verify(hook.Secret, a.Header, a.Body))
			require.NoError(t, webhook.Verify(hook.Secret, a.Header, a.Body, a.Timestamp, time.Minute))
			require.False(t, ids[a.ID], "webhook-id %s used by two events", a.ID)
			ids[a.ID] = true
			require.Equal(t, 1, a.Attempt)
			require.Equal(t, reviewapi.WebhookUserAgent, a.Header.Get("User-Agent"))
			ts, err := strconv.ParseInt(a.Header.Get("webhook-timestamp"), 10, 64)
			require.NoError(t, err)
			require.GreaterOrEqual(t, ts, apiEpoch.Unix(), "webhook-timestamp follows the service's clock")
			require.LessOrEqual(t, ts, h.clock.Now().Unix())
		}
		byTask := eventsOf(t, acks)
		requireEventTypes(t, byTask, approved.ID, spec.EventTaskCreated, spec.EventTaskCompleted)
		requireEventTypes(t, byTask, decided.ID, spec.EventTaskCreated, spec.EventTaskRequiresIntervention, spec.EventTaskCompleted)
		requireEventTypes(t, byTask, timedOut.ID, spec.EventTaskCreated, spec.EventTaskRequiresIntervention, spec.EventTaskTimeout, spec.EventTaskCompleted)
		for id, types := range byTask {
			for typ, es := range types {
				e := es[0]
				require.Equal(t, id, e.Task.ID)
				switch typ {
				case spec.EventTaskCreated:
					require.Equal(t, spec.StatusPending, e.Task.Status)
					require.Equal(t, spec.NewTime(apiEpoch).String(), e.Timestamp)
				case spec.EventTaskRequiresIntervention:
					require.Equal(t, spec.StatusRequiresIntervention, e.Task.Status)
					require.False(t, e.Task.ReviewDeadline.IsZero())
				case spec.EventTaskCompleted:
					require.Contains(t, []string{spec.StatusApproved, spec.StatusRejected}, e.Task.Status)
					require.NotNil(t, e.Task.Decision)
				case spec.EventTaskTimeout:
					require.Equal(t, spec.StatusRejected, e.Task.Status)
					require.Equal(t, types[spec.EventTaskCompleted][0].Task, e.Task, "both carry the final task")
					require.Equal(t, spec.DecidedBySystem, e.Task.Decision.By)
				}
			}
		}
		require.Equal(t, spec.DecidedByReviewer, byTask[decided.ID][spec.EventTaskCompleted][0].Task.Decision.By)
		require.Equal(t, "no", byTask[decided.ID][spec.EventTaskCompleted][0].Task.Decision.Comment)

		// The receiver acknowledges before the service records it.
		ds := tn.waitDeliveries(t, "all delivered", allDelivered(9))
		for _, d := range ds {
			require.Equal(t, "delivered", d.State, "%+v", d)
			require.Equal(t, 1, d.Attempts)
			require.Equal(t, http.StatusOK, d.LastStatus)
			require.Equal(t, hook.ID, d.WebhookID)
		}
	})
}

func TestAPIWebhookEventsFilter(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		all := webhooktest.NewReceiver(t, "")
		tn.register(t, all)
		finals := webhooktest.NewReceiver(t, "")
		fh := tn.register(t, finals, spec.EventTaskCompleted, spec.EventTaskTimeout)
		require.Equal(t, []string{spec.EventTaskCompleted, spec.EventTaskTimeout}, fh.Events)
		waiting := webhooktest.NewReceiver(t, "")
		wh := tn.register(t, waiting, spec.EventTaskRequiresIntervention)

		approved := tn.submit(t, "hello")
		timesOut := tn.submit(t, "Project Falcon")
		h.clock.Advance(25 * time.Hour)
		n, err := h.service().SweepTimeouts(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)

		waitAcks(t, all, 6)
		got := eventsOf(t, waitAcks(t, finals, 3))
		requireEventTypes(t, got, approved.ID, spec.EventTaskCompleted)
		requireEventTypes(t, got, timesOut.ID, spec.EventTaskTimeout, spec.EventTaskCompleted)
		got = eventsOf(t, waitAcks(t, waiting, 1))
		requireEventTypes(t, got, timesOut.ID, spec.EventTaskRequiresIntervention)

		// Only the subscribed events were ever queued for them.
		ds, err := h.service().Deliveries(t.Context(), tn.org.ID)
		require.NoError(t, err)
		require.Len(t, ds, 10)
		for _, d := range ds {
			switch d.WebhookID {
			case fh.ID:
				require.Contains(t, fh.Events, d.EventType)
			case wh.ID:
				require.Equal(t, spec.EventTaskRequiresIntervention, d.EventType)
			}
		}
		require.Len(t, finals.Deliveries(), 3)
		require.Len(t, waiting.Deliveries(), 1)
	})
}

func TestAPIWebhookRetriesThenExactlyOneAcknowledgement(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		rcv := webhooktest.NewReceiver(t, "")
		rcv.FailFirst(3)
		tn.register(t, rcv)
		task := tn.submit(t, "hello")

		acks := waitAcks(t, rcv, 2)
		// The schedule is 20, 40 and 80 ms: wait well past it for strays.
		requireQuiet(t, rcv, 8, 500*time.Millisecond)
		require.Len(t, rcv.Acknowledged(), 2)
		byID := map[string][]webhooktest.Delivery{}
		for _, d := range rcv.Deliveries() {
			byID[d.ID] = append(byID[d.ID], d)
		}
		require.Len(t, byID, 2)
		types := map[string]bool{}
		for _, a := range acks {
			require.Equal(t, 4, a.Attempt)
			attempts := byID[a.ID]
			require.Len(t, attempts, 4)
			for i, d := range attempts {
				require.Equal(t, i+1, d.Attempt, "attempts arrive in order")
				require.NoError(t, d.Err, "every attempt is signed")
				require.Equal(t, string(attempts[0].Body), string(d.Body), "every attempt carries the same body")
				if i < 3 {
					require.Equal(t, http.StatusInternalServerError, d.Status)
				}
			}
			require.True(t, attempts[3].Acknowledged())
			e := decodeEvent(t, a)
			require.Equal(t, task.ID, e.Task.ID)
			types[e.Type] = true
		}
		require.Equal(t, map[string]bool{spec.EventTaskCreated: true, spec.EventTaskCompleted: true}, types)

		ds := tn.waitDeliveries(t, "both delivered", allDelivered(2))
		for _, d := range ds {
			require.Equal(t, 4, d.Attempts)
			require.Equal(t, http.StatusOK, d.LastStatus)
		}
	})
}

func TestAPIWebhookGoneStopsRetries(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		rcv := webhooktest.NewReceiver(t, "")
		rcv.RespondWith(http.StatusGone)
		tn.register(t, rcv, spec.EventTaskCompleted)
		tn.submit(t, "hello")

		ds := tn.waitDeliveries(t, "410 gives up", func(ds []reviewapi.DeliveryState) bool {
			return len(ds) == 1 && ds[0].State == "failed"
		})
		require.Equal(t, 1, ds[0].Attempts)
		require.Equal(t, http.StatusGone, ds[0].LastStatus)
		require.NotEmpty(t, ds[0].LastError)
		requireQuiet(t, rcv, 1, 500*time.Millisecond)
	})
}

func TestAPIWebhookGivesUpAfterSchedule(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		rcv := webhooktest.NewReceiver(t, "")
		rcv.RespondWith(http.StatusServiceUnavailable)
		tn.register(t, rcv, spec.EventTaskCompleted)
		tn.submit(t, "hello")

		ds := tn.waitDeliveries(t, "exhausted schedule", func(ds []reviewapi.DeliveryState) bool {
			return len(ds) == 1 && ds[0].State == "failed"
		})
		// One attempt and one retry per entry of the schedule.
		require.Equal(t, 1+len(h.cfg.RetrySchedule), ds[0].Attempts)
		require.Equal(t, http.StatusServiceUnavailable, ds[0].LastStatus)
		requireQuiet(t, rcv, 1+len(h.cfg.RetrySchedule), 500*time.Millisecond)
		got := rcv.Deliveries()
		for i, d := range got {
			require.Equal(t, i+1, d.Attempt)
			require.Equal(t, got[0].ID, d.ID)
		}
	})
}

func TestAPIWebhookDeletedGetsNothingMore(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		gone := webhooktest.NewReceiver(t, "")
		goneHook := tn.register(t, gone)
		stays := webhooktest.NewReceiver(t, "")
		tn.register(t, stays)

		tn.submit(t, "hello")
		waitAcks(t, gone, 2)
		waitAcks(t, stays, 2)
		r := tn.call(t, http.MethodDelete, "/webhooks/"+goneHook.ID, nil)
		require.Equal(t, http.StatusNoContent, r.Status, "%s", r.Body)
		require.Empty(t, r.Body)

		second := tn.submit(t, "Project Falcon")
		h.clock.Advance(25 * time.Hour)
		n, err := h.service().SweepTimeouts(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		got := eventsOf(t, waitAcks(t, stays, 6))
		requireEventTypes(t, got, second.ID, spec.EventTaskCreated, spec.EventTaskRequiresIntervention, spec.EventTaskTimeout, spec.EventTaskCompleted)
		require.Len(t, gone.Deliveries(), 2)
		ds, err := h.service().Deliveries(t.Context(), tn.org.ID)
		require.NoError(t, err)
		n = 0
		for _, d := range ds {
			if d.WebhookID == goneHook.ID {
				n++
			}
		}
		require.Equal(t, 2, n, "no delivery was recorded for the deleted webhook")
	})
}

func TestAPIWebhookDeletedCancelsRetries(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, func(c *reviewapi.Config) {
			c.RetrySchedule = []time.Duration{300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}
		})
		tn := h.newTenant("Acme", "", 0)
		rcv := webhooktest.NewReceiver(t, "")
		rcv.RespondWith(http.StatusInternalServerError)
		hook := tn.register(t, rcv, spec.EventTaskCompleted)
		tn.submit(t, "hello")

		ctx, cancel := context.WithTimeout(t.Context(), apiWait)
		defer cancel()
		first, err := rcv.Wait(ctx, 1)
		require.NoError(t, err)
		require.Len(t, first, 1)
		r := tn.call(t, http.MethodDelete, "/webhooks/"+hook.ID, nil)
		require.Equal(t, http.StatusNoContent, r.Status, "%s", r.Body)
		tn.waitDeliveries(t, "cancelled", func(ds []reviewapi.DeliveryState) bool {
			return len(ds) == 1 && ds[0].State == "cancelled"
		})
		requireQuiet(t, rcv, 1, 1500*time.Millisecond)
	})
}

func TestAPIWebhookSurvivesRestartMidRetry(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, func(c *reviewapi.Config) {
			c.RetrySchedule = []time.Duration{3 * time.Second, 3 * time.Second}
		})
		tn := h.newTenant("Acme", "", 0)
		rcv := webhooktest.NewReceiver(t, "")
		rcv.FailFirst(1)
		tn.register(t, rcv, spec.EventTaskCompleted)
		task := tn.submit(t, "hello")

		// The first attempt failed and its failure is recorded: the
		// delivery waits three seconds for its retry. The process stops.
		tn.waitDeliveries(t, "first attempt failed", func(ds []reviewapi.DeliveryState) bool {
			return len(ds) == 1 && ds[0].Attempts == 1 && ds[0].State == "pending"
		})
		h.stopService()
		require.Len(t, rcv.Deliveries(), 1)
		require.Empty(t, rcv.Acknowledged())

		// Another process on the same database delivers it.
		h.startService()
		acks := waitAcks(t, rcv, 1)
		require.Equal(t, 2, acks[0].Attempt)
		all := rcv.Deliveries()
		require.Equal(t, all[0].ID, acks[0].ID)
		require.Equal(t, string(all[0].Body), string(acks[0].Body))
		e := decodeEvent(t, acks[0])
		require.Equal(t, spec.EventTaskCompleted, e.Type)
		require.Equal(t, task.ID, e.Task.ID)
		tn.waitDeliveries(t, "delivered after the restart", func(ds []reviewapi.DeliveryState) bool {
			return len(ds) == 1 && ds[0].State == "delivered" && ds[0].Attempts == 2
		})
	})
}

// allDelivered holds when there are n deliveries, all delivered.
func allDelivered(n int) func([]reviewapi.DeliveryState) bool {
	return func(ds []reviewapi.DeliveryState) bool {
		if len(ds) != n {
			return false
		}
		for _, d := range ds {
			if d.State != "delivered" {
				return false
			}
		}
		return true
	}
}

// --- registration

func TestAPIWebhookRegistration(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		other := h.newTenant("Other", "", 0)

		r := tn.call(t, http.MethodPost, "/webhooks", map[string]any{
			"url": "https://hooks.northwind.test.invalid/aiusage", "events": []string{"task.completed", "task.timeout"}, "description": "Ticketing"})
		// The host does not resolve: refused at registration.
		requireAPIError(t, r, http.StatusBadRequest, spec.CodeInvalidRequest, "url")

		r = tn.call(t, http.MethodPost, "/webhooks", map[string]any{
			"url": "https://127.0.0.1:8443/aiusage", "events": []string{"task.completed", "task.timeout"}, "description": "Ticketing"})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
		var created map[string]any
		require.NoError(t, json.Unmarshal(r.Body, &created))
		require.ElementsMatch(t, []string{"id", "url", "events", "description", "createdAt", "secret"}, keys(created))
		var hook spec.Webhook
		require.NoError(t, json.Unmarshal(r.Body, &hook))
		require.Equal(t, "https://127.0.0.1:8443/aiusage", hook.URL)
		require.Equal(t, []string{"task.completed", "task.timeout"}, hook.Events)
		require.Equal(t, "Ticketing", hook.Description)
		requireTime(t, apiEpoch, hook.CreatedAt, "createdAt")
		require.True(t, strings.HasPrefix(hook.Secret, "whsec_"), hook.Secret)
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(hook.Secret, "whsec_"))
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(key), 24)

		h.clock.Advance(time.Second)
		second := tn.register(t, webhooktest.NewReceiver(t, ""))
		requireTime(t, apiEpoch.Add(time.Second), second.CreatedAt, "createdAt")
		require.NotEqual(t, hook.Secret, second.Secret)

		// Listed oldest first, never with the secret.
		r = tn.call(t, http.MethodGet, "/webhooks", nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		requireSchema(t, "webhook-list", r.Body)
		require.NotContains(t, string(r.Body), "secret")
		require.NotContains(t, string(r.Body), hook.Secret)
		var list spec.WebhookList
		require.NoError(t, json.Unmarshal(r.Body, &list))
		require.Len(t, list.Data, 2)
		hook.Secret, second.Secret = "", ""
		// Listed with their count of failed attempts in a row.
		hook.ConsecutiveFailures, second.ConsecutiveFailures = new(int), new(int)
		require.Equal(t, []spec.Webhook{hook, second}, list.Data)

		// Another organisation sees none of them and cannot delete them.
		r = other.call(t, http.MethodGet, "/webhooks", nil)
		require.Equal(t, http.StatusOK, r.Status)
		require.JSONEq(t, `{"data":[]}`, string(r.Body))
		requireAPIError(t, other.call(t, http.MethodDelete, "/webhooks/"+hook.ID, nil), http.StatusNotFound, spec.CodeNotFound, "")

		// Delete: 204, then 404; a malformed id is 404 too.
		r = tn.call(t, http.MethodDelete, "/webhooks/"+hook.ID, nil)
		require.Equal(t, http.StatusNoContent, r.Status, "%s", r.Body)
		require.Empty(t, r.Body)
		requireAPIError(t, tn.call(t, http.MethodDelete, "/webhooks/"+hook.ID, nil), http.StatusNotFound, spec.CodeNotFound, "")
		requireAPIError(t, tn.call(t, http.MethodDelete, "/webhooks/not-a-uuid", nil), http.StatusNotFound, spec.CodeNotFound, "")
		requireAPIError(t, tn.call(t, http.MethodDelete, "/webhooks/6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d", nil), http.StatusNotFound, spec.CodeNotFound, "")
		r = tn.call(t, http.MethodGet, "/webhooks", nil)
		require.NoError(t, json.Unmarshal(r.Body, &list))
		require.Equal(t, []spec.Webhook{second}, list.Data)
	})
}

func TestAPIWebhookRegistrationBadBodies(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		url := "https://127.0.0.1/hooks"
		for _, c := range []struct {
			name  string
			body  any
			field string
		}{
			{"unknown field", map[string]any{"url": url, "secret": "whsec_mine"}, "secret"},
			{"event not in the enum", map[string]any{"url": url, "events": []string{"task.approved"}}, "events"},
			{"duplicate events", map[string]any{"url": url, "events": []string{"task.created", "task.created"}}, "events"},
			{"no events", map[string]any{"url": url, "events": []string{}}, "events"},
			{"events not an array", map[string]any{"url": url, "events": "task.created"}, "events"},
			{"missing url", map[string]any{"events": []string{"task.created"}}, "url"},
			{"url not a string", map[string]any{"url": 42}, "url"},
			{"empty url", map[string]any{"url": ""}, "url"},
			{"relative url", map[string]any{"url": "/hooks"}, "url"},
			{"description too long", map[string]any{"url": url, "description": strings.Repeat("d", 501)}, "description"},
			{"invalid JSON", `{"url":`, "body"},
			{"not an object", `["https://127.0.0.1/hooks"]`, "body"},
			{"two values", `{"url":"https://127.0.0.1/hooks"} {}`, "body"},
			{"empty body", ``, "body"},
		} {
			t.Run(c.name, func(t *testing.T) {
				requireAPIError(t, tn.call(t, http.MethodPost, "/webhooks", c.body), http.StatusBadRequest, spec.CodeInvalidRequest, c.field)
			})
		}
		r := tn.call(t, http.MethodPost, "/webhooks", `{"url":"https://127.0.0.1/hooks"}`, "Content-Type", "text/plain")
		requireAPIError(t, r, http.StatusBadRequest, spec.CodeInvalidRequest, "Content-Type")
		r = tn.call(t, http.MethodGet, "/webhooks", nil)
		require.JSONEq(t, `{"data":[]}`, string(r.Body), "nothing was registered")
	})
}

func TestAPIWebhookPrivateTargets(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		strict := startHarness(t, db, func(c *reviewapi.Config) { c.AllowPrivateWebhooks = false })
		tn := strict.newTenant("Strict", "", 0)
		refused := []string{
			"https://127.0.0.1/x",
			"https://localhost/x",
			"http://example.com",
			"http://8.8.8.8/hooks",
			"https://[::1]/x",
			"https://10.1.2.3/x",
			"https://172.16.0.1/x",
			"https://192.168.1.10/x",
			"https://169.254.169.254/latest/meta-data",
			"https://[fe80::1]/x",
			"https://[::ffff:127.0.0.1]/x",
			"https://0.0.0.0/x",
			"ftp://8.8.8.8/x",
		}
		for _, u := range refused {
			r := tn.call(t, http.MethodPost, "/webhooks", map[string]any{"url": u})
			requireAPIError(t, r, http.StatusBadRequest, spec.CodeInvalidRequest, "url")
		}
		// A public address over https is accepted.
		r := tn.call(t, http.MethodPost, "/webhooks", map[string]any{"url": "https://8.8.8.8/hooks"})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)

		// With AllowPrivateWebhooks, the same targets are accepted.
		lax := startHarness(t, sqldbtest.Open(t, db.Dialect), nil)
		ln := lax.newTenant("Lax", "", 0)
		for _, u := range []string{"https://127.0.0.1/x", "https://localhost/x", "http://127.0.0.1:8080/x", "https://[::1]/x", "https://10.1.2.3/x", "https://169.254.169.254/x"} {
			r := ln.call(t, http.MethodPost, "/webhooks", map[string]any{"url": u})
			require.Equal(t, http.StatusCreated, r.Status, "%s: %s", u, r.Body)
		}
	})
}

func TestAPIWebhookFailedAttempts(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, func(c *reviewapi.Config) { c.DeliveryTimeout = 300 * time.Millisecond })
		tn := h.newTenant("Acme", "", 0)

		// A receiver slower than the attempt's timeout: the attempt is
		// abandoned and retried.
		slow := webhooktest.NewReceiver(t, "")
		slow.Slow(5 * time.Second)
		tn.register(t, slow, spec.EventTaskCompleted)
		// A redirect is a failed attempt, never followed.
		redirecting := webhooktest.NewReceiver(t, "")
		target := webhooktest.NewReceiver(t, "")
		redirecting.RedirectTo(target.URL())
		rh := tn.register(t, redirecting, spec.EventTaskCompleted)
		target.SetSecret(rh.Secret)
		// A receiver that cannot verify the signature refuses every attempt.
		wrongSecret := webhooktest.NewReceiver(t, "")
		tn.register(t, wrongSecret, spec.EventTaskCompleted)
		wrongSecret.SetSecret(webhook.NewSecret())

		tn.submit(t, "hello")
		ctx, cancel := context.WithTimeout(t.Context(), apiWait)
		defer cancel()
		first, err := slow.Wait(ctx, 1)
		require.NoError(t, err)
		slow.Slow(0)
		acks := waitAcks(t, slow, 1)
		require.Equal(t, first[0].ID, acks[0].ID)
		require.Greater(t, acks[0].Attempt, 1)
		require.True(t, slow.Deliveries()[0].Abandoned, "the first attempt timed out")

		attempts := 1 + len(h.cfg.RetrySchedule)
		tn.waitDeliveries(t, "redirect and bad signature give up", func(ds []reviewapi.DeliveryState) bool {
			states := map[string]int{}
			for _, d := range ds {
				states[d.State]++
			}
			return states["failed"] == 2 && states["delivered"] == 1
		})
		require.Len(t, redirecting.Deliveries(), attempts)
		require.Empty(t, target.Deliveries(), "the redirect is not followed")
		require.Len(t, wrongSecret.Deliveries(), attempts)
		for _, d := range wrongSecret.Deliveries() {
			require.ErrorIs(t, d.Err, webhooktest.ErrBadSignature)
		}
		ds, err := h.service().Deliveries(t.Context(), tn.org.ID)
		require.NoError(t, err)
		for _, d := range ds {
			switch d.State {
			case "failed":
				require.Equal(t, attempts, d.Attempts)
				require.Contains(t, []int{http.StatusTemporaryRedirect, http.StatusUnauthorized}, d.LastStatus)
			default:
				require.Equal(t, "delivered", d.State)
			}
		}
	})
}

// TestAPIWebhookGetByID: GET /webhooks/{id} answers the webhook as the list
// shows it, never its secret; an id that is another organisation's,
// unknown, deleted or malformed is the same 404 NOT_FOUND as DELETE's.
func TestAPIWebhookGetByID(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		other := h.newTenant("Other", "", 0)
		hook := tn.register(t, webhooktest.NewReceiver(t, ""), "task.completed")
		h.clock.Advance(time.Second)
		second := tn.register(t, webhooktest.NewReceiver(t, ""))
		theirs := other.register(t, webhooktest.NewReceiver(t, ""))

		var list spec.WebhookList
		r := tn.call(t, http.MethodGet, "/webhooks", nil)
		require.NoError(t, json.Unmarshal(r.Body, &list))
		require.Len(t, list.Data, 2)
		for i, created := range []spec.Webhook{hook, second} {
			want := created
			want.Secret, want.ConsecutiveFailures = "", new(int)
			for _, path := range []string{"/webhooks/" + created.ID, "/webhooks/" + strings.ToUpper(created.ID)} {
				r := tn.call(t, http.MethodGet, path, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				require.Equal(t, "application/json", r.Header.Get("Content-Type"))
				requireSchema(t, "webhook", r.Body)
				require.NotContains(t, string(r.Body), "secret")
				require.NotContains(t, string(r.Body), created.Secret)
				require.NotEmpty(t, r.Header.Get("RateLimit"), "counted like every answer to a key")
				var got spec.Webhook
				require.NoError(t, json.Unmarshal(r.Body, &got))
				require.Equal(t, list.Data[i], got, "as listed")
				require.Equal(t, want, got)
			}
		}

		notFound := tn.call(t, http.MethodGet, "/webhooks/6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d", nil)
		requireAPIError(t, notFound, http.StatusNotFound, spec.CodeNotFound, "")
		r = tn.call(t, http.MethodGet, "/webhooks/"+theirs.ID, nil)
		requireAPIError(t, r, http.StatusNotFound, spec.CodeNotFound, "")
		require.Equal(t, string(notFound.Body), string(r.Body), "another organisation's webhook is an unknown one")
		requireAPIError(t, other.call(t, http.MethodGet, "/webhooks/"+hook.ID, nil), http.StatusNotFound, spec.CodeNotFound, "")
		requireAPIError(t, tn.call(t, http.MethodGet, "/webhooks/not-a-uuid", nil), http.StatusNotFound, spec.CodeNotFound, "")
		r = other.call(t, http.MethodGet, "/webhooks/"+theirs.ID, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)

		require.Equal(t, http.StatusNoContent, tn.call(t, http.MethodDelete, "/webhooks/"+hook.ID, nil).Status)
		requireAPIError(t, tn.call(t, http.MethodGet, "/webhooks/"+hook.ID, nil), http.StatusNotFound, spec.CodeNotFound, "")
		require.Equal(t, http.StatusOK, tn.call(t, http.MethodGet, "/webhooks/"+second.ID, nil).Status)
	})
}
