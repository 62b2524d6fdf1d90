package reviewapi_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/race"
	"github.com/aiusage/kit/internal/testkit/webhooktest"
	"github.com/aiusage/kit/spec"
)

// TestAPIWebhookFairness is issue 19's finding: every organisation's
// deliveries shared one queue of ten workers, so twenty webhooks of one
// organisation at a receiver that never answers held every worker for the
// whole delivery timeout, and another organisation's deliveries waited
// behind all of them (minutes). Each organisation now has a bounded share of
// the delivery workers, so the other organisation's deliveries keep their
// latency.
func TestAPIWebhookFairness(t *testing.T) {
	if race.Enabled {
		// The race detector slows every worker several times over, so
		// latencies under it are its own, not the service's; the delivery
		// paths it watches run in the other delivery tests.
		t.Skip("a latency bound; make test checks it without the race detector")
	}
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		// The production delivery timeout: each attempt at the slow
		// receiver holds a worker 10 s.
		const deliveryTimeout = 10 * time.Second
		h := startHarness(t, db, func(c *reviewapi.Config) { c.DeliveryTimeout = deliveryTimeout })
		slowOrg := h.newTenant("Slow Corp", "", 0)
		fastOrg := h.newTenant("Fast Corp", "", 0)

		// The slow receiver holds every request a minute, far longer than
		// the delivery timeout; it is closed, first, when the test ends.
		slow := webhooktest.NewReceiver(t, "")
		slow.Slow(time.Minute)
		for range reviewapi.MaxWebhooks {
			slowOrg.register(t, slow)
		}
		fast := webhooktest.NewReceiver(t, "")
		fastOrg.register(t, fast)

		// measure submits n approved tasks of the fast organisation, one
		// after another, and returns the latency of each of their
		// deliveries (task.created and task.completed): from just before
		// the task was submitted, when it is decided, to the receiver.
		measure := func(n int) []time.Duration {
			sent := map[string]time.Time{}
			before := len(fast.Acknowledged())
			for range n {
				at := time.Now()
				task := fastOrg.submit(t, "hello")
				require.Equal(t, spec.StatusApproved, task.Status)
				sent[task.ID] = at
			}
			// Bounded well below the minutes the deliveries took
			// before, and below the test's own deadline.
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			acks, err := fast.WaitAcknowledged(ctx, before+2*n)
			require.NoError(t, err, "the fast organisation's deliveries waited behind the slow one's")
			var lat []time.Duration
			for _, d := range acks[before:] {
				var body struct {
					Data struct{ ID string } `json:"data"`
				}
				require.NoError(t, json.Unmarshal(d.Body, &body))
				at, ok := sent[body.Data.ID]
				require.True(t, ok, "a delivery of task %s", body.Data.ID)
				lat = append(lat, d.ReceivedAt.Sub(at))
			}
			return lat
		}

		idle := measure(5)

		// The slow organisation's burst: 10 tasks, 2 events each, to 20
		// webhooks, 400 deliveries, each attempt held for the timeout.
		for range 10 {
			slowOrg.submit(t, "hello")
		}
		ctx, cancel := context.WithTimeout(t.Context(), apiWait)
		defer cancel()
		_, err := slow.Wait(ctx, 4)
		require.NoError(t, err, "the slow receiver holds deliveries")

		busy := measure(10)
		idleP99, busyP99 := p99(idle), p99(busy)
		t.Logf("%s: the fast organisation's delivery latency p99 %s idle, %s beside the slow organisation (median %s); the slow receiver got %d requests",
			db.Dialect, idleP99, busyP99, median(busy), len(slow.Deliveries()))
		// Well below one attempt at the slow receiver, let alone the
		// minute it holds each request.
		require.Less(t, busyP99, deliveryTimeout/2, "p99 with the slow organisation busy")
	})
}

// median is the median (lower middle) of ds.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// p99 is the 99th percentile (nearest rank) of ds.
func p99(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(math.Ceil(0.99*float64(len(s))))-1]
}

// TestAPIWebhookFailingEndpoint: a webhook whose attempts keep failing gets
// a short timeout per attempt (Config.FailingDeliveryTimeout) instead of
// the whole delivery timeout, so a receiver that hangs holds a worker
// briefly; an acknowledged attempt makes it healthy again.
func TestAPIWebhookFailingEndpoint(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		const deliveryTimeout = time.Minute
		h := startHarness(t, db, func(c *reviewapi.Config) {
			c.DeliveryTimeout = deliveryTimeout
			c.FailingAfter = 2
			c.FailingDeliveryTimeout = 200 * time.Millisecond
			c.RetrySchedule = slices.Repeat([]time.Duration{20 * time.Millisecond}, 6)
		})
		tn := h.newTenant("Acme", "", 0)
		rcv := webhooktest.NewReceiver(t, "")
		hook := tn.register(t, rcv, spec.EventTaskCreated)
		// failures reads the count in GET /webhooks.
		failures := func() int {
			r := tn.call(t, http.MethodGet, "/webhooks", nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			requireSchema(t, "webhook-list", r.Body)
			var l spec.WebhookList
			require.NoError(t, json.Unmarshal(r.Body, &l))
			require.Len(t, l.Data, 1)
			require.Equal(t, hook.ID, l.Data[0].ID)
			require.NotNil(t, l.Data[0].ConsecutiveFailures, "%s", r.Body)
			return *l.Data[0].ConsecutiveFailures
		}
		require.Zero(t, failures())
		settled := func(n int) func([]reviewapi.DeliveryState) bool {
			return func(ds []reviewapi.DeliveryState) bool {
				return len(ds) == n && !slices.ContainsFunc(ds, func(d reviewapi.DeliveryState) bool { return d.State == "pending" })
			}
		}

		// Every attempt of the first event fails fast: 7 failures.
		rcv.RespondWith(http.StatusInternalServerError)
		tn.submit(t, "hello")
		tn.waitDeliveries(t, "the first event given up", settled(1))
		require.Equal(t, 7, failures())

		// The receiver now hangs: each attempt ends after the failing
		// timeout, not the minute of the delivery timeout.
		rcv.RespondWith(http.StatusOK)
		rcv.Slow(time.Hour)
		tn.submit(t, "hello")
		ctx, cancel := context.WithTimeout(t.Context(), deliveryTimeout/2)
		defer cancel()
		for {
			if slices.ContainsFunc(rcv.Deliveries(), func(d webhooktest.Delivery) bool { return d.Abandoned }) {
				break
			}
			select {
			case <-ctx.Done():
				require.FailNow(t, "an attempt at the hanging receiver lasted the whole delivery timeout")
			case <-time.After(10 * time.Millisecond):
			}
		}
		tn.waitDeliveries(t, "the second event given up", settled(2))
		require.Equal(t, 14, failures())

		// One acknowledged attempt and the webhook is healthy.
		rcv.Slow(0)
		tn.submit(t, "hello")
		waitAcks(t, rcv, 1)
		tn.waitDeliveries(t, "the third event delivered", settled(3))
		require.Zero(t, failures())
	})
}
