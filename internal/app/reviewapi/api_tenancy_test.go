package reviewapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/webhooktest"
	"github.com/aiusage/kit/spec"
)

func TestAPITenantIsolation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		a := h.newTenant("Acme", "", 0)
		b := h.newTenant("Globex", "", 0)
		ra := webhooktest.NewReceiver(t, "")
		hookA := a.register(t, ra)
		rb := webhooktest.NewReceiver(t, "")
		hookB := b.register(t, rb)
		svc := h.service()

		a1 := a.submit(t, "hello")
		a2 := a.submit(t, "Project Falcon")
		b1 := b.submit(t, "Project Falcon")
		own := map[string]string{a1.ID: a.org.ID, a2.ID: a.org.ID, b1.ID: b.org.ID}

		// Lists.
		la := a.list(t, "")
		require.Equal(t, 2, la.Total)
		require.ElementsMatch(t, []string{a1.ID, a2.ID}, []string{la.Data[0].ID, la.Data[1].ID})
		lb := b.list(t, "")
		require.Equal(t, 1, lb.Total)
		require.Equal(t, b1.ID, lb.Data[0].ID)
		require.Equal(t, 1, b.list(t, "status=requires_intervention").Total)

		// Gets.
		requireAPIError(t, b.call(t, http.MethodGet, "/review-tasks/"+a1.ID, nil), http.StatusNotFound, spec.CodeTaskNotFound, "")
		requireAPIError(t, a.call(t, http.MethodGet, "/review-tasks/"+b1.ID, nil), http.StatusNotFound, spec.CodeTaskNotFound, "")
		_, err := svc.Task(t.Context(), a.org.ID, b1.ID)
		require.ErrorIs(t, err, reviewapi.ErrTaskNotFound)

		// Agents.
		requireAPIError(t, b.call(t, http.MethodPost, "/review-tasks", a.taskBody("hello")), http.StatusBadRequest, spec.CodeInvalidRequest, "agentId")

		// Webhooks.
		var list spec.WebhookList
		r := b.call(t, http.MethodGet, "/webhooks", nil)
		require.NoError(t, json.Unmarshal(r.Body, &list))
		require.Len(t, list.Data, 1)
		require.Equal(t, hookB.ID, list.Data[0].ID)
		requireAPIError(t, b.call(t, http.MethodDelete, "/webhooks/"+hookA.ID, nil), http.StatusNotFound, spec.CodeNotFound, "")
		r = a.call(t, http.MethodGet, "/webhooks", nil)
		require.NoError(t, json.Unmarshal(r.Body, &list))
		require.Len(t, list.Data, 1)
		require.Equal(t, hookA.ID, list.Data[0].ID)

		// The reviewer's queue.
		qa, err := svc.Queue(t.Context(), a.org.ID)
		require.NoError(t, err)
		require.Len(t, qa, 1)
		require.Equal(t, a2.ID, qa[0].ID)

		// Events: each organisation's receiver gets its own tasks only,
		// the timeouts of both included.
		h.clock.Advance(25 * time.Hour)
		n, err := svc.SweepTimeouts(t.Context())
		require.NoError(t, err)
		require.Equal(t, 2, n)
		acksA := waitAcks(t, ra, 2+4)
		acksB := waitAcks(t, rb, 4)
		for rcv, acks := range map[string][]webhooktest.Delivery{a.org.ID: acksA, b.org.ID: acksB} {
			for id := range eventsOf(t, acks) {
				require.Equal(t, rcv, own[id], "task %s delivered to the wrong organisation", id)
			}
		}
		for _, c := range []struct {
			tn    *tenant
			hook  string
			count int
		}{{a, hookA.ID, 6}, {b, hookB.ID, 4}} {
			t.Run(c.tn.org.Name, func(t *testing.T) {
				ds, err := svc.Deliveries(t.Context(), c.tn.org.ID)
				require.NoError(t, err)
				require.Len(t, ds, c.count)
				for _, d := range ds {
					require.Equal(t, c.hook, d.WebhookID)
					require.Equal(t, c.tn.org.ID, own[d.TaskID])
				}
			})
		}
		require.Len(t, rb.Deliveries(), 4)
	})
}

func TestAPIConcurrentSubmissions(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		rcv := webhooktest.NewReceiver(t, "")
		tn.register(t, rcv, spec.EventTaskCreated)

		const n = 20
		type result struct {
			status int
			body   []byte
			err    error
		}
		results := make([]result, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				texts := []string{"hello", "salary", "Project Falcon", "DE89370400440532013000"}
				status, body, err := rawPost(h.url+"/review-tasks", tn.key, tn.taskBody(fmt.Sprintf("%s %d", texts[i%len(texts)], i)))
				results[i] = result{status, body, err}
			})
		}
		close(start)
		wg.Wait()

		ids := map[string]bool{}
		for i, res := range results {
			require.NoError(t, res.err, "request %d", i)
			require.Equal(t, http.StatusCreated, res.status, "request %d: %s", i, res.body)
			var task spec.ReviewTask
			require.NoError(t, json.Unmarshal(res.body, &task))
			require.False(t, ids[task.ID])
			ids[task.ID] = true
		}
		require.Len(t, ids, n)

		// Exactly one task.created per task.
		waitAcks(t, rcv, n)
		tn.waitDeliveries(t, "all delivered", allDelivered(n))
		requireQuiet(t, rcv, n, 300*time.Millisecond)
		acks := rcv.Acknowledged()
		require.Len(t, acks, n)
		seen := map[string]int{}
		for _, a := range acks {
			e := decodeEvent(t, a)
			require.Equal(t, spec.EventTaskCreated, e.Type)
			require.True(t, ids[e.Task.ID], "unknown task %s", e.Task.ID)
			seen[e.Task.ID]++
		}
		for id := range ids {
			require.Equal(t, 1, seen[id], "task %s", id)
		}

		// Every request was counted: 1 registration, 20 tasks, and this one.
		r := tn.call(t, http.MethodGet, "/review-tasks?limit=1", nil)
		require.Equal(t, http.StatusOK, r.Status)
		requireRateHeaders(t, r, "standard", 1000, 1000-n-2, 3600)
		var l spec.ReviewTaskList
		require.NoError(t, json.Unmarshal(r.Body, &l))
		require.Equal(t, n, l.Total)
	})
}
