package reviewapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

func TestAPIAuthentication(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		ctx := t.Context()

		revoked, revokedID := tn.newKey(org.KeyTypeAPI)
		_, err := h.orgs.RevokeKey(ctx, tn.org.ID, revokedID, admin)
		require.NoError(t, err)
		soon := h.clock.Now().Add(time.Hour)
		expiring, err := h.orgs.CreateKey(ctx, org.KeyCreate{OrganisationID: tn.org.ID, Name: "short", Type: org.KeyTypeAPI, ExpiresAt: &soon}, admin)
		require.NoError(t, err)
		ingestion, _ := tn.newKey(org.KeyTypeIngestion)

		// Every form of the key works.
		for _, hdr := range [][]string{
			{"Authorization", "Bearer " + tn.key},
			{"Authorization", "bearer " + tn.key},
			{"Authorization", tn.key},
			{"X-API-Key", tn.key},
			{"X-API-Key", tn.key, "Authorization", "Bearer aiu_wrong"},
			{"Authorization", "Bearer " + expiring.Secret},
		} {
			r := h.send(t, http.MethodGet, "/review-tasks", nil, hdr...)
			require.Equal(t, http.StatusOK, r.Status, "%v: %s", hdr, r.Body)
		}
		// The keys' last use names the review-task API.
		used, err := h.orgs.KeysLastUsed(ctx, tn.org.ID)
		require.NoError(t, err)
		require.Equal(t, org.UseReviewAPI, used[expiring.ID].API)

		// Every failure gets the same answer.
		h.clock.Advance(time.Hour) // the short key expires
		var first []byte
		for _, hdr := range [][]string{
			{},
			{"Authorization", ""},
			{"Authorization", "Bearer "},
			{"Authorization", "Bearer aiu_0000000000000000000000000000000000000000000000"},
			{"Authorization", "Bearer " + tn.key + "x"},
			{"Authorization", "Basic " + tn.key},
			{"Authorization", "Bearer " + revoked},
			{"Authorization", "Bearer " + expiring.Secret},
			{"X-API-Key", "aiu_wrong", "Authorization", "Bearer " + tn.key},
			{"X-API-Key", "", "Authorization", "Bearer " + tn.key},
			{"Authorization", "Bearer " + strings.Repeat("k", 10000)},
		} {
			r := h.send(t, http.MethodGet, "/review-tasks", nil, hdr...)
			requireAPIError(t, r, http.StatusUnauthorized, spec.CodeAuthenticationFailed, "")
			require.Equal(t, `Bearer realm="aiusage"`, r.Header.Get("WWW-Authenticate"))
			if first == nil {
				first = r.Body
			}
			require.Equal(t, string(first), string(r.Body), "%v", hdr)
		}

		// Every endpoint asks for a key.
		for _, req := range [][2]string{
			{http.MethodPost, "/review-tasks"}, {http.MethodGet, "/review-tasks"},
			{http.MethodGet, "/review-tasks/6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d"},
			{http.MethodPost, "/review-tasks/6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d/decision"},
			{http.MethodPost, "/webhooks"}, {http.MethodGet, "/webhooks"},
			{http.MethodDelete, "/webhooks/6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d"},
		} {
			r := h.send(t, req[0], req[1], map[string]any{})
			requireAPIError(t, r, http.StatusUnauthorized, spec.CodeAuthenticationFailed, "")
		}

		// An Ingestion key is the wrong kind.
		for _, hdr := range [][]string{{"Authorization", "Bearer " + ingestion}, {"X-API-Key", ingestion}, {"Authorization", ingestion}} {
			r := h.send(t, http.MethodGet, "/review-tasks", nil, hdr...)
			requireAPIError(t, r, http.StatusForbidden, spec.CodeForbidden, "")
			r = h.send(t, http.MethodPost, "/review-tasks", tn.taskBody("hello"), hdr...)
			requireAPIError(t, r, http.StatusForbidden, spec.CodeForbidden, "")
		}
		list, err := h.service().ListTasks(ctx, tn.org.ID, reviewapi.TaskQuery{Limit: 100})
		require.NoError(t, err)
		require.Zero(t, list.Total)
	})
}

func TestAPIDecisionNeedsAPerson(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		task := tn.submit(t, "Project Falcon")
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch} {
			r := tn.call(t, m, "/review-tasks/"+task.ID+"/decision", map[string]any{"decision": "approve", "reviewer": "bot"})
			requireAPIError(t, r, http.StatusForbidden, spec.CodeForbidden, "")
		}
		r := tn.call(t, http.MethodPost, "/review-tasks/"+task.ID+"/decision", map[string]any{"decision": "approve"}, "X-API-Key", tn.key)
		requireAPIError(t, r, http.StatusForbidden, spec.CodeForbidden, "")
		require.Equal(t, task, tn.get(t, task.ID), "the task is unchanged")
	})
}

func TestAPITaskNotFound(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		other := h.newTenant("Other", "", 0)
		task := tn.submit(t, "hello")

		unknown := tn.call(t, http.MethodGet, "/review-tasks/6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d", nil)
		requireAPIError(t, unknown, http.StatusNotFound, spec.CodeTaskNotFound, "")
		for _, id := range []string{"abc", "6a7b8c9d0e1f4a2b9c3d4e5f6a7b8c9dx", "%20", "6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9"} {
			r := tn.call(t, http.MethodGet, "/review-tasks/"+id, nil)
			requireAPIError(t, r, http.StatusNotFound, spec.CodeTaskNotFound, "")
		}
		// Another organisation's task is answered as if it did not exist.
		r := other.call(t, http.MethodGet, "/review-tasks/"+task.ID, nil)
		requireAPIError(t, r, http.StatusNotFound, spec.CodeTaskNotFound, "")
		require.Equal(t, string(unknown.Body), string(r.Body))
		_, err := h.service().Task(t.Context(), other.org.ID, task.ID)
		require.ErrorIs(t, err, reviewapi.ErrTaskNotFound)

		// The id is a UUID in any case.
		require.Equal(t, task, tn.get(t, strings.ToUpper(task.ID)))
	})
}

func TestAPIMethodNotAllowed(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		r := tn.call(t, http.MethodPut, "/review-tasks", map[string]any{})
		requireAPIError(t, r, http.StatusMethodNotAllowed, spec.CodeMethodNotAllowed, "")
		require.Equal(t, "GET, HEAD, POST", r.Header.Get("Allow"))
		r = tn.call(t, http.MethodDelete, "/review-tasks/6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d", nil)
		requireAPIError(t, r, http.StatusMethodNotAllowed, spec.CodeMethodNotAllowed, "")
		r = tn.call(t, http.MethodPut, "/webhooks/6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d", map[string]any{})
		requireAPIError(t, r, http.StatusMethodNotAllowed, spec.CodeMethodNotAllowed, "")
		require.Equal(t, "GET, HEAD, DELETE", r.Header.Get("Allow"))
	})
}

func TestAPICreateBodyErrors(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		other := h.newTenant("Other", "", 0)
		msgs := []map[string]any{{"role": "user", "content": "hello"}}
		req := map[string]any{"messages": msgs}
		for _, c := range []struct {
			name  string
			body  any
			field string
		}{
			{"invalid JSON", `{"agentId":`, "body"},
			{"trailing data", `{"agentId":"` + tn.agent.ID + `","request":{"messages":[{"role":"user","content":"x"}]}} x`, "body"},
			{"empty body", ``, "body"},
			{"not an object", `[]`, "body"},
			{"unknown field", map[string]any{"agentId": tn.agent.ID, "request": req, "priority": "high"}, "priority"},
			{"missing agentId", map[string]any{"request": req}, "agentId"},
			{"agentId not a UUID", map[string]any{"agentId": "support-bot", "request": req}, "agentId"},
			{"agentId not a string", map[string]any{"agentId": 7, "request": req}, "agentId"},
			{"agentId of another organisation", map[string]any{"agentId": other.agent.ID, "request": req}, "agentId"},
			{"agentId unknown", map[string]any{"agentId": "5a1d7e90-2b3c-4f6e-8d1a-9c0b7e6f5a42", "request": req}, "agentId"},
			{"missing request", map[string]any{"agentId": tn.agent.ID}, "request"},
			{"missing messages", map[string]any{"agentId": tn.agent.ID, "request": map[string]any{"model": "x"}}, "request.messages"},
			{"empty messages", map[string]any{"agentId": tn.agent.ID, "request": map[string]any{"messages": []any{}}}, "request.messages"},
			{"messages not an array", map[string]any{"agentId": tn.agent.ID, "request": map[string]any{"messages": "hello"}}, "request.messages"},
			{"message without content", map[string]any{"agentId": tn.agent.ID, "request": map[string]any{"messages": []any{map[string]any{"role": "user"}}}}, "request.messages.content"},
			{"message with empty role", map[string]any{"agentId": tn.agent.ID, "request": map[string]any{"messages": []any{map[string]any{"role": "", "content": "x"}}}}, "request.messages.role"},
			{"content not a string", map[string]any{"agentId": tn.agent.ID, "request": map[string]any{"messages": []any{map[string]any{"role": "user", "content": 1}}}}, "request.messages.content"},
			{"metadata not an object", map[string]any{"agentId": tn.agent.ID, "request": req, "metadata": "x"}, "metadata"},
			{"externalId too long", map[string]any{"agentId": tn.agent.ID, "request": req, "externalId": strings.Repeat("e", 201)}, "externalId"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := tn.call(t, http.MethodPost, "/review-tasks", c.body)
				requireAPIError(t, r, http.StatusBadRequest, spec.CodeInvalidRequest, c.field)
			})
		}

		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", ""} {
			r := tn.call(t, http.MethodPost, "/review-tasks", tn.taskBody("hello"), "Content-Type", ct)
			requireAPIError(t, r, http.StatusBadRequest, spec.CodeInvalidRequest, "Content-Type")
		}
		r := tn.call(t, http.MethodPost, "/review-tasks", tn.taskBody("hello"), "Content-Type", "application/json; charset=utf-8")
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)

		list, err := h.service().ListTasks(t.Context(), tn.org.ID, reviewapi.TaskQuery{Limit: 100})
		require.NoError(t, err)
		require.Equal(t, 1, list.Total, "only the valid request made a task")
	})
}

// TestAPIBodyTooLarge sends bodies over 1 MiB: 413 with the error body. The
// answer must follow the published error schema (spec/schemas/review-error.json),
// whose code enum must therefore list the code of a 413.
func TestAPIBodyTooLarge(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		for _, c := range []struct {
			path string
			body any
		}{
			{"/review-tasks", tn.taskBody(strings.Repeat("a", httpx.MaxBodyBytes))},
			{"/webhooks", map[string]any{"url": "https://127.0.0.1/x", "description": strings.Repeat("d", httpx.MaxBodyBytes)}},
		} {
			t.Run(strings.TrimPrefix(c.path, "/"), func(t *testing.T) {
				r := tn.call(t, http.MethodPost, c.path, c.body)
				require.Equal(t, http.StatusRequestEntityTooLarge, r.Status, "%s", r.Body)
				var e spec.ReviewError
				require.NoError(t, json.Unmarshal(r.Body, &e), "%s", r.Body)
				require.Equal(t, reviewapi.CodePayloadTooLarge, e.Error.Code)
				require.Equal(t, "body", e.Error.Field)
				require.Contains(t, e.Error.Message, "1048576")
				requireAPIError(t, r, http.StatusRequestEntityTooLarge, reviewapi.CodePayloadTooLarge, "body")
			})
		}
		list, err := h.service().ListTasks(t.Context(), tn.org.ID, reviewapi.TaskQuery{Limit: 100})
		require.NoError(t, err)
		require.Zero(t, list.Total)
	})
}

func TestAPIListParameterErrors(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		for _, c := range []struct{ query, field string }{
			{"status=done", "status"},
			{"status=APPROVED", "status"},
			{"status=approved&status=rejected", "status"},
			{"limit=0", "limit"},
			{"limit=101", "limit"},
			{"limit=-1", "limit"},
			{"limit=abc", "limit"},
			{"limit=1.5", "limit"},
			{"limit=", "limit"},
			{"limit=1&limit=2", "limit"},
			{"offset=-1", "offset"},
			{"include=requests", "include"},
			{"include=request,user", "include"},
			{"include=request&include=request", "include"},
			{"offset=x", "offset"},
			{"offset=", "offset"},
			{"from=yesterday", "from"},
			{"from=2027-02-30", "from"},
			{"to=2027-3-02", "to"},
			{"from=2027-03-02&to=2027-03-01", "to"},
			{"from=2027-03-02T09:00:00", "from"},
			{"to=2027-13-01T00:00:00Z", "to"},
			{"to=2027-03-02%2010:00:00Z", "to"},
			{"from=2027-03-02T10:00:00Z&to=2027-03-02T09:00:00Z", "to"},
			{"from=2027-03-02T10:00:00Z&to=2027-03-02T10:00:00Z", "to"},
			{"from=2027-03-02T10:00:00Z&to=" + url.QueryEscape("2027-03-02T10:30:00+01:00"), "to"},
		} {
			t.Run(c.query, func(t *testing.T) {
				r := tn.call(t, http.MethodGet, "/review-tasks?"+c.query, nil)
				requireAPIError(t, r, http.StatusBadRequest, spec.CodeInvalidRequest, c.field)
			})
		}
		for _, q := range []string{"", "limit=1", "limit=100", "offset=0", "status=processing", "from=2027-03-02T09:00:00Z", "unknown=1"} {
			r := tn.call(t, http.MethodGet, "/review-tasks?"+q, nil)
			require.Equal(t, http.StatusOK, r.Status, "%s: %s", q, r.Body)
		}
	})
}

func TestAPIListFiltersAndPages(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		texts := []string{"hello", "salary", "Project Falcon", "hi", "DE89370400440532013000"}
		tasks := make([]spec.ReviewTask, len(texts))
		for i, s := range texts {
			if i > 0 {
				h.clock.Advance(time.Second)
			}
			tasks[i] = tn.submit(t, s)
		}
		ids := func(l spec.ReviewTaskList) []string {
			out := []string{}
			for _, task := range l.Data {
				out = append(out, task.ID)
			}
			return out
		}

		l := tn.list(t, "")
		require.Equal(t, 5, l.Total)
		require.Equal(t, 20, l.Limit)
		require.Zero(t, l.Offset)
		require.Equal(t, []string{tasks[4].ID, tasks[3].ID, tasks[2].ID, tasks[1].ID, tasks[0].ID}, ids(l), "newest first")
		whole := tasks[2]
		require.NotNil(t, whole.Request)
		brief := whole
		brief.Request, brief.RedactedRequest = nil, nil
		require.Equal(t, brief, l.Data[2], "list items are whole tasks but for the request")
		require.Nil(t, l.NextOffset, "the last page")
		l = tn.list(t, "include=request")
		require.Equal(t, whole, l.Data[2], "include=request keeps it")
		// The redacted copy is request text too.
		redacted := tasks[4]
		require.NotNil(t, redacted.RedactedRequest, "the IBAN task is approved redacted")
		require.Equal(t, redacted, tn.list(t, "include=request").Data[0])
		require.Nil(t, tn.list(t, "").Data[0].RedactedRequest)

		l = tn.list(t, "status=approved")
		require.Equal(t, 3, l.Total)
		require.Equal(t, []string{tasks[4].ID, tasks[3].ID, tasks[0].ID}, ids(l))
		l = tn.list(t, "status=requires_intervention")
		require.Equal(t, []string{tasks[2].ID}, ids(l))
		l = tn.list(t, "status=rejected")
		require.Zero(t, l.Total)
		r := tn.call(t, http.MethodGet, "/review-tasks?status=rejected", nil)
		var raw map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(r.Body, &raw))
		require.Equal(t, "[]", string(raw["data"]), "an empty page is [], not null")

		l = tn.list(t, "limit=2&offset=1")
		require.Equal(t, 5, l.Total)
		require.Equal(t, 2, l.Limit)
		require.Equal(t, 1, l.Offset)
		require.Equal(t, []string{tasks[3].ID, tasks[2].ID}, ids(l))
		require.Equal(t, 3, *l.NextOffset)
		l = tn.list(t, "limit=2&offset=4")
		require.Equal(t, []string{tasks[0].ID}, ids(l))
		require.Nil(t, l.NextOffset)
		l = tn.list(t, "offset=10")
		require.Equal(t, 5, l.Total)
		require.Empty(t, l.Data)

		// from inclusive, to exclusive, any offset.
		at := func(i int) time.Time { return apiEpoch.Add(time.Duration(i) * time.Second) }
		q := func(from, to time.Time) string {
			return "from=" + url.QueryEscape(from.Format(time.RFC3339Nano)) + "&to=" + url.QueryEscape(to.Format(time.RFC3339Nano))
		}
		l = tn.list(t, q(at(1), at(3)))
		require.Equal(t, []string{tasks[2].ID, tasks[1].ID}, ids(l))
		require.Equal(t, 2, l.Total)
		berlin := time.FixedZone("CET", 3600)
		l = tn.list(t, q(at(1).In(berlin), at(3).In(berlin)))
		require.Equal(t, []string{tasks[2].ID, tasks[1].ID}, ids(l))
		l = tn.list(t, q(at(1).Add(time.Millisecond), at(3).Add(time.Millisecond)))
		require.Equal(t, []string{tasks[3].ID, tasks[2].ID}, ids(l))
		l = tn.list(t, q(at(1).Add(-time.Microsecond), at(3).Add(-time.Microsecond)))
		require.Equal(t, []string{tasks[2].ID, tasks[1].ID}, ids(l), "sub-millisecond bounds")
		l = tn.list(t, "from="+url.QueryEscape(at(3).Format(time.RFC3339))+"&status=approved")
		require.Equal(t, []string{tasks[4].ID, tasks[3].ID}, ids(l))
		l = tn.list(t, "to="+url.QueryEscape(at(0).Format(time.RFC3339)))
		require.Empty(t, l.Data)

		// Tasks created at the same millisecond come in id order.
		h.clock.Advance(time.Second)
		var same []string
		for range 4 {
			same = append(same, tn.submit(t, "hello").ID)
		}
		slices.Sort(same)
		l = tn.list(t, "limit=4")
		require.Equal(t, same, ids(l))
		l = tn.list(t, "limit=2&offset=2")
		require.Equal(t, same[2:], ids(l))
	})
}

// TestAPIListPageBytes: a page's cost is bounded by its bytes, not only by
// limit. By default the tasks leave their requests out, so a page of large
// tasks is small; with include=request a page stops at the byte budget
// (holding at least one task) and nextOffset walks the rest, each task once.
func TestAPIListPageBytes(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		const n, size = 8, 300 << 10 // 8 tasks of 300 KiB of request each
		want := map[string]bool{}
		for i := range n {
			h.clock.Advance(time.Second)
			want[tn.submit(t, strings.Repeat(string(rune('a'+i)), size)).ID] = true
		}
		r := tn.call(t, http.MethodGet, "/review-tasks?limit=100", nil)
		require.Equal(t, http.StatusOK, r.Status)
		require.Less(t, len(r.Body), 64<<10, "without their requests the tasks are small")
		var l spec.ReviewTaskList
		require.NoError(t, json.Unmarshal(r.Body, &l))
		require.Len(t, l.Data, n)
		require.Nil(t, l.NextOffset)

		got := map[string]bool{}
		pages := 0
		for offset := 0; ; pages++ {
			r := tn.call(t, http.MethodGet, fmt.Sprintf("/review-tasks?limit=100&include=request&offset=%d", offset), nil)
			require.Equal(t, http.StatusOK, r.Status)
			require.LessOrEqual(t, len(r.Body), reviewapi.MaxPageBytes+size+4<<10, "a page stops at the budget")
			requireSchema(t, "review-task-list", r.Body)
			var l spec.ReviewTaskList
			require.NoError(t, json.Unmarshal(r.Body, &l))
			require.NotEmpty(t, l.Data)
			require.Equal(t, n, l.Total)
			for _, task := range l.Data {
				require.False(t, got[task.ID], "task %s twice", task.ID)
				got[task.ID] = true
				require.Len(t, task.Request.Messages[0].Content, size)
			}
			if l.NextOffset == nil {
				break
			}
			require.Equal(t, offset+len(l.Data), *l.NextOffset)
			offset = *l.NextOffset
		}
		require.Equal(t, want, got)
		require.GreaterOrEqual(t, pages, 2, "8 tasks of 300 KiB do not fit in one page of 1 MiB")
	})
}

// TestAPIListDateBounds checks that from and to of GET /review-tasks accept a
// plain date, the whole UTC day: from is the day's start, to the next day's
// start (exclusive), and that they mix with timestamps.
func TestAPIListDateBounds(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		// apiEpoch is 2027-03-02T09:29:28Z.
		a := tn.submit(t, "hello").ID
		h.clock.Advance(time.Date(2027, 3, 2, 23, 59, 59, 999e6, time.UTC).Sub(h.clock.Now()))
		b := tn.submit(t, "hello").ID
		h.clock.Advance(time.Millisecond) // 2027-03-03T00:00:00Z
		c := tn.submit(t, "hello").ID
		h.clock.Advance(34 * time.Hour) // 2027-03-04T10:00:00Z
		d := tn.submit(t, "hello").ID
		ids := func(query string) []string {
			out := []string{}
			for _, task := range tn.list(t, query).Data {
				out = append(out, task.ID)
			}
			return out
		}
		require.Equal(t, []string{b, a}, ids("from=2027-03-02&to=2027-03-02"), "one day, its last millisecond included")
		require.Equal(t, []string{c}, ids("from=2027-03-03&to=2027-03-03"), "the next day starts at midnight")
		require.Equal(t, []string{b, a}, ids("to=2027-03-02"), "to is the end of the day")
		require.Equal(t, []string{d, c}, ids("from=2027-03-03"), "from is the start of the day")
		require.Equal(t, []string{c, b, a}, ids("from=2027-03-02&to=2027-03-03"))
		require.Equal(t, []string{a}, ids("from=2027-03-02&to=2027-03-02T10:00:00Z"), "a date and a timestamp")
		require.Equal(t, []string{d}, ids("from=2027-03-03T00:00:00.001Z&to=2027-03-04"))
		require.Empty(t, ids("from=2027-03-05"))

		r := tn.call(t, http.MethodGet, "/review-tasks?from=2027-02-29", nil)
		requireAPIError(t, r, http.StatusBadRequest, spec.CodeInvalidRequest, "from")
		require.Contains(t, string(r.Body), "a date such as 2026-03-02")
	})
}
