package reviewapi_test

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/webhooktest"
	"github.com/aiusage/kit/spec"
)

// requireEventTypes requires that the task got exactly the events of types
// (in any order), one each.
func requireEventTypes(t *testing.T, byTask map[string]map[string][]event, taskID string, types ...string) {
	t.Helper()
	got := map[string]int{}
	for typ, es := range byTask[taskID] {
		got[typ] = len(es)
	}
	want := map[string]int{}
	for _, typ := range types {
		want[typ]++
	}
	require.Equal(t, want, got, "events of task %s", taskID)
}

func requireTime(t *testing.T, want time.Time, got spec.Time, what string) {
	t.Helper()
	require.True(t, want.Equal(got.Time), "%s: got %s, want %s", what, got, spec.NewTime(want))
}

func TestAPIApprovedByPolicy(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		rcv := webhooktest.NewReceiver(t, "")
		tn.register(t, rcv)

		task := tn.submit(t, "Hello, how are you?")
		require.Equal(t, spec.StatusApproved, task.Status)
		require.Equal(t, tn.agent.ID, task.AgentID)
		require.Empty(t, task.Reasons)
		require.Nil(t, task.RedactedRequest)
		require.NotNil(t, task.Decision)
		require.Equal(t, spec.DecidedByPolicy, task.Decision.By)
		require.Empty(t, task.Decision.Reviewer)
		requireTime(t, apiEpoch, task.Decision.DecidedAt, "decidedAt")
		requireTime(t, apiEpoch, task.CreatedAt, "createdAt")
		requireTime(t, apiEpoch, task.CompletedAt, "completedAt")
		require.True(t, task.ReviewDeadline.IsZero())
		require.Equal(t, task, tn.get(t, task.ID))

		byTask := eventsOf(t, waitAcks(t, rcv, 2))
		requireEventTypes(t, byTask, task.ID, spec.EventTaskCreated, spec.EventTaskCompleted)
		created := byTask[task.ID][spec.EventTaskCreated][0]
		require.Equal(t, spec.StatusPending, created.Task.Status)
		require.Equal(t, tn.agent.ID, created.Task.AgentID)
		require.Equal(t, "Hello, how are you?", created.Task.Request.Messages[0].Content)
		completed := byTask[task.ID][spec.EventTaskCompleted][0]
		require.Equal(t, task, completed.Task, "task.completed carries the task as decided")
		require.Equal(t, spec.NewTime(apiEpoch).String(), completed.Timestamp)
	})
}

func TestAPIRedactedApproval(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		rcv := webhooktest.NewReceiver(t, "")
		tn.register(t, rcv, spec.EventTaskCompleted)

		system := "You are a helpful assistant — für Überweisungen."
		user := "Grüße 👋 — bitte überweise an DE89370400440532013000, danke! Oder DE12345678901234567890."
		body := map[string]any{"agentId": tn.agent.ID, "externalId": "req-1", "metadata": map[string]any{"ticket": "SUP-1"},
			"request": map[string]any{"model": "gpt-x", "temperature": 0.2, "messages": []map[string]any{
				{"role": "system", "content": system},
				{"role": "user", "content": user, "name": "ana"},
			}}}
		r := tn.call(t, http.MethodPost, "/review-tasks", body)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
		var task spec.ReviewTask
		require.NoError(t, json.Unmarshal(r.Body, &task))

		require.Equal(t, spec.StatusApproved, task.Status)
		require.Equal(t, spec.DecidedByPolicy, task.Decision.By)
		require.Equal(t, "req-1", task.ExternalID)
		require.JSONEq(t, `{"ticket":"SUP-1"}`, string(task.Metadata))
		// The request is kept as sent, extra members included.
		require.Equal(t, system, task.Request.Messages[0].Content)
		require.Equal(t, user, task.Request.Messages[1].Content)
		require.JSONEq(t, `0.2`, string(task.Request.Extra["temperature"]))
		require.JSONEq(t, `"ana"`, string(task.Request.Messages[1].Extra["name"]))

		// One reason, the IBAN instruction, with a span per IBAN in code
		// points of message 1.
		require.Len(t, task.Reasons, 1)
		reason := task.Reasons[0]
		require.Equal(t, tn.instrs[instrIBAN].ID, reason.InstructionID)
		require.Equal(t, instrIBAN, reason.Title)
		require.Equal(t, spec.ActionBlock, reason.Action)
		require.Equal(t, spec.CriticalityLow, reason.Criticality)
		require.Len(t, reason.Matches, 2)
		runes := []rune(user)
		for i, iban := range []string{"DE89370400440532013000", "DE12345678901234567890"} {
			m := reason.Matches[i]
			require.Equal(t, 1, m.MessageIndex)
			require.Equal(t, iban, string(runes[m.Start:m.End]), "span %d is in code points", i)
		}

		// The redacted copy: text outside the spans byte for byte, each span
		// replaced by the mark; message 0 and the other members untouched.
		require.NotNil(t, task.RedactedRequest)
		red := task.RedactedRequest
		require.Equal(t, "gpt-x", red.Model)
		require.Len(t, red.Messages, 2)
		require.Equal(t, system, red.Messages[0].Content)
		require.Equal(t, "system", red.Messages[0].Role)
		m0, m1 := reason.Matches[0], reason.Matches[1]
		want := string(runes[:m0.Start]) + "[REDACTED]" + string(runes[m0.End:m1.Start]) + "[REDACTED]" + string(runes[m1.End:])
		require.Equal(t, "Grüße 👋 — bitte überweise an [REDACTED], danke! Oder [REDACTED].", want)
		require.Equal(t, want, red.Messages[1].Content)
		require.Equal(t, "user", red.Messages[1].Role)
		require.JSONEq(t, `"ana"`, string(red.Messages[1].Extra["name"]))

		// GET and the webhook show the same task.
		require.Equal(t, task, tn.get(t, task.ID))
		acks := waitAcks(t, rcv, 1)
		e := decodeEvent(t, acks[0])
		require.Equal(t, spec.EventTaskCompleted, e.Type)
		require.Equal(t, task, e.Task)
		require.Contains(t, e.Data, "redactedRequest")
	})
}

func TestAPIChangeRequestedByPolicy(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		rcv := webhooktest.NewReceiver(t, "")
		tn.register(t, rcv)

		task := tn.submit(t, "What is the SALARY of Bob?")
		require.Equal(t, spec.StatusChangeRequested, task.Status)
		require.Equal(t, spec.DecidedByPolicy, task.Decision.By)
		require.Len(t, task.Reasons, 1)
		require.Equal(t, tn.instrs[instrSalaries].ID, task.Reasons[0].InstructionID)
		require.Equal(t, []spec.MatchSpan{{MessageIndex: 0, Start: 12, End: 18}}, task.Reasons[0].Matches)
		requireTime(t, apiEpoch, task.CompletedAt, "completedAt")
		require.True(t, task.ReviewDeadline.IsZero())

		// A redacting Low match with a non-redacting Low one is
		// change_requested too, with both reasons.
		both := tn.submit(t, "Pay the salary to DE89370400440532013000")
		require.Equal(t, spec.StatusChangeRequested, both.Status)
		var ids []string
		for _, r := range both.Reasons {
			ids = append(ids, r.InstructionID)
		}
		require.ElementsMatch(t, []string{tn.instrs[instrSalaries].ID, tn.instrs[instrIBAN].ID}, ids)

		byTask := eventsOf(t, waitAcks(t, rcv, 4))
		requireEventTypes(t, byTask, task.ID, spec.EventTaskCreated, spec.EventTaskCompleted)
		requireEventTypes(t, byTask, both.ID, spec.EventTaskCreated, spec.EventTaskCompleted)
		require.Equal(t, task, byTask[task.ID][spec.EventTaskCompleted][0].Task)
	})
}

func TestAPIRequiresIntervention(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		rcv := webhooktest.NewReceiver(t, "")
		tn.register(t, rcv)

		// High wins over Low.
		task := tn.submit(t, "Status of project falcon? And the payroll.")
		require.Equal(t, spec.StatusRequiresIntervention, task.Status)
		require.Nil(t, task.Decision)
		require.True(t, task.CompletedAt.IsZero())
		requireTime(t, apiEpoch.Add(reviewapi.DefaultReviewTimeout), task.ReviewDeadline, "reviewDeadline")
		var ids []string
		for _, r := range task.Reasons {
			ids = append(ids, r.InstructionID)
		}
		require.ElementsMatch(t, []string{tn.instrs[instrMergers].ID, tn.instrs[instrSalaries].ID}, ids)
		require.Equal(t, task, tn.get(t, task.ID))

		byTask := eventsOf(t, waitAcks(t, rcv, 2))
		requireEventTypes(t, byTask, task.ID, spec.EventTaskCreated, spec.EventTaskRequiresIntervention)
		e := byTask[task.ID][spec.EventTaskRequiresIntervention][0]
		require.Equal(t, task, e.Task)
		require.Contains(t, e.Data, "reviewDeadline")

		queue, err := h.service().Queue(t.Context(), tn.org.ID)
		require.NoError(t, err)
		require.Len(t, queue, 1)
		require.Equal(t, task.ID, queue[0].ID)
	})
}

func TestAPIReviewerDecisions(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		rcv := webhooktest.NewReceiver(t, "")
		tn.register(t, rcv, spec.EventTaskCompleted)

		cases := []struct {
			decision, status, comment string
		}{
			{reviewapi.DecisionApprove, spec.StatusApproved, "The deal is public now."},
			{reviewapi.DecisionReject, spec.StatusRejected, ""},
			{reviewapi.DecisionRequestChanges, spec.StatusChangeRequested, "Leave out the deal terms."},
		}
		tasks := make([]spec.ReviewTask, len(cases))
		for i := range cases {
			tasks[i] = tn.submit(t, "Talking points for Project Falcon")
			require.Equal(t, spec.StatusRequiresIntervention, tasks[i].Status)
		}
		h.clock.Advance(90 * time.Minute)
		decidedAt := apiEpoch.Add(90 * time.Minute)
		for i, c := range cases {
			got, err := tn.decide(tasks[i].ID, c.decision, c.comment)
			require.NoError(t, err, c.decision)
			require.Equal(t, c.status, got.Status)
			require.Equal(t, &spec.ReviewDecision{By: spec.DecidedByReviewer, Reviewer: tn.reviewer.Email, ReviewerID: tn.reviewer.ID,
				Choice: c.decision, Comment: c.comment, DecidedAt: spec.NewTime(decidedAt)}, got.Decision)
			requireTime(t, decidedAt, got.CompletedAt, "completedAt")
			requireTime(t, decidedAt, got.UpdatedAt, "updatedAt")
			require.Equal(t, tasks[i].Reasons, got.Reasons)
			require.Equal(t, got, tn.get(t, tasks[i].ID))
		}
		byTask := eventsOf(t, waitAcks(t, rcv, len(cases)))
		for i, c := range cases {
			requireEventTypes(t, byTask, tasks[i].ID, spec.EventTaskCompleted)
			e := byTask[tasks[i].ID][spec.EventTaskCompleted][0]
			require.Equal(t, c.status, e.Task.Status)
			require.Equal(t, spec.DecidedByReviewer, e.Task.Decision.By)
			require.Equal(t, tn.reviewer.Email, e.Task.Decision.Reviewer)
			require.Equal(t, c.comment, e.Task.Decision.Comment)
			require.Equal(t, spec.NewTime(decidedAt).String(), e.Timestamp)
		}

		// A decision the service does not know is refused.
		waiting := tn.submit(t, "Project Falcon again")
		_, err := tn.decide(waiting.ID, "maybe", "")
		require.Error(t, err)
		require.Equal(t, spec.StatusRequiresIntervention, tn.get(t, waiting.ID).Status)
		_, err = tn.decide("0b0e5b1c-0000-4000-8000-000000000000", reviewapi.DecisionApprove, "")
		require.ErrorIs(t, err, reviewapi.ErrTaskNotFound)
	})
}

func TestAPIConcurrentDecisionsOneWins(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		task := tn.submit(t, "Project Falcon")
		decisions := []string{reviewapi.DecisionApprove, reviewapi.DecisionReject, reviewapi.DecisionRequestChanges,
			reviewapi.DecisionApprove, reviewapi.DecisionReject, reviewapi.DecisionRequestChanges}
		errs := make([]error, len(decisions))
		results := make([]spec.ReviewTask, len(decisions))
		var wg sync.WaitGroup
		for i, d := range decisions {
			wg.Go(func() { results[i], errs[i] = tn.decide(task.ID, d, "") })
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			if err == nil {
				require.Equal(t, -1, won, "two decisions succeeded: %d and %d", won, i)
				won = i
				continue
			}
			require.ErrorIs(t, err, reviewapi.ErrFinal, "decision %d", i)
		}
		require.NotEqual(t, -1, won, "no decision succeeded: %v", errs)
		require.Equal(t, results[won], tn.get(t, task.ID))
	})
}

func TestAPIReviewTimeout(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		rcv := webhooktest.NewReceiver(t, "")
		tn.register(t, rcv)
		svc := h.service()

		task := tn.submit(t, "Project Falcon timeline")
		require.Equal(t, spec.StatusRequiresIntervention, task.Status)
		deadline := apiEpoch.Add(24 * time.Hour)
		requireTime(t, deadline, task.ReviewDeadline, "reviewDeadline")

		h.clock.Advance(24*time.Hour - time.Millisecond)
		n, err := svc.SweepTimeouts(t.Context())
		require.NoError(t, err)
		require.Zero(t, n, "the deadline has not passed")
		require.Equal(t, spec.StatusRequiresIntervention, tn.get(t, task.ID).Status)

		h.clock.Advance(2 * time.Millisecond)
		n, err = svc.SweepTimeouts(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		now := deadline.Add(time.Millisecond)
		got := tn.get(t, task.ID)
		require.Equal(t, spec.StatusRejected, got.Status)
		require.Equal(t, &spec.ReviewDecision{By: spec.DecidedBySystem, Reason: reviewapi.ReasonTimeout,
			Choice: reviewapi.DecisionReject, DecidedAt: spec.NewTime(now)}, got.Decision)
		requireTime(t, now, got.CompletedAt, "completedAt")
		requireTime(t, deadline, got.ReviewDeadline, "reviewDeadline")
		require.Equal(t, task.Reasons, got.Reasons)

		// Once only.
		n, err = svc.SweepTimeouts(t.Context())
		require.NoError(t, err)
		require.Zero(t, n)
		_, err = tn.decide(task.ID, reviewapi.DecisionApprove, "")
		require.ErrorIs(t, err, reviewapi.ErrFinal)

		// created, requires_intervention, then timeout and completed, both
		// with the task in its final state.
		byTask := eventsOf(t, waitAcks(t, rcv, 4))
		requireEventTypes(t, byTask, task.ID, spec.EventTaskCreated, spec.EventTaskRequiresIntervention, spec.EventTaskTimeout, spec.EventTaskCompleted)
		for _, typ := range []string{spec.EventTaskTimeout, spec.EventTaskCompleted} {
			e := byTask[task.ID][typ][0]
			require.Equal(t, got, e.Task, typ)
			require.Equal(t, spec.NewTime(now).String(), e.Timestamp, typ)
		}
		ds, err := svc.Deliveries(t.Context(), tn.org.ID)
		require.NoError(t, err)
		require.Len(t, ds, 4)
	})
}

func TestAPIOrganisationReviewTimeout(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		short := h.newTenant("Short", "", 0)
		other := h.newTenant("Default", "", 0)
		svc := h.service()

		require.NoError(t, svc.SetReviewTimeout(t.Context(), short.org.ID, 2*time.Hour))
		d, err := svc.ReviewTimeout(t.Context(), short.org.ID)
		require.NoError(t, err)
		require.Equal(t, 2*time.Hour, d)
		d, err = svc.ReviewTimeout(t.Context(), other.org.ID)
		require.NoError(t, err)
		require.Equal(t, reviewapi.DefaultReviewTimeout, d)
		require.Error(t, svc.SetReviewTimeout(t.Context(), short.org.ID, -time.Second))

		a := short.submit(t, "Project Falcon")
		b := other.submit(t, "Project Falcon")
		requireTime(t, apiEpoch.Add(2*time.Hour), a.ReviewDeadline, "short reviewDeadline")
		requireTime(t, apiEpoch.Add(24*time.Hour), b.ReviewDeadline, "default reviewDeadline")

		h.clock.Advance(2*time.Hour + time.Millisecond)
		n, err := svc.SweepTimeouts(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, spec.StatusRejected, short.get(t, a.ID).Status)
		require.Equal(t, spec.StatusRequiresIntervention, other.get(t, b.ID).Status)

		// 0 restores the default for tasks that start waiting afterwards.
		require.NoError(t, svc.SetReviewTimeout(t.Context(), short.org.ID, 0))
		c := short.submit(t, "Project Falcon")
		requireTime(t, h.clock.Now().UTC().Truncate(time.Millisecond).Add(24*time.Hour), c.ReviewDeadline, "restored reviewDeadline")
	})
}

func TestAPIFinalStatesNeverChange(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		svc := h.service()
		ctx := t.Context()

		finals := map[string]spec.ReviewTask{
			"approved by policy":         tn.submit(t, "hello"),
			"redacted by policy":         tn.submit(t, "DE89370400440532013000"),
			"change_requested by policy": tn.submit(t, "salary"),
		}
		for _, d := range []string{reviewapi.DecisionApprove, reviewapi.DecisionReject, reviewapi.DecisionRequestChanges} {
			w := tn.submit(t, "Project Falcon")
			got, err := tn.decide(w.ID, d, "")
			require.NoError(t, err)
			finals[d+" by reviewer"] = got
		}
		timesOut := tn.submit(t, "Project Falcon")
		h.clock.Advance(25 * time.Hour)
		n, err := svc.SweepTimeouts(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		finals["rejected by timeout"] = tn.get(t, timesOut.ID)

		before := map[string][]byte{}
		for name, task := range finals {
			r := tn.call(t, http.MethodGet, "/review-tasks/"+task.ID, nil)
			require.Equal(t, http.StatusOK, r.Status)
			before[name] = r.Body
		}
		for name, task := range finals {
			for _, d := range []string{reviewapi.DecisionApprove, reviewapi.DecisionReject, reviewapi.DecisionRequestChanges} {
				_, err := tn.decide(task.ID, d, "again")
				require.ErrorIs(t, err, reviewapi.ErrFinal, "%s: %s", name, d)
			}
		}
		h.clock.Advance(72 * time.Hour)
		n, err = svc.SweepTimeouts(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		for name, task := range finals {
			r := tn.call(t, http.MethodGet, "/review-tasks/"+task.ID, nil)
			require.Equal(t, http.StatusOK, r.Status)
			require.Equal(t, string(before[name]), string(r.Body), name)
		}
	})
}

func TestAPIAllowExemptsBlock(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", org.PlanStandard, 0)

		// Every Block match lies within the Allow match: approved, and the
		// Allow instruction is listed.
		exempt := tn.submit(t, "Please summarise the Project Falcon press release.")
		require.Equal(t, spec.StatusApproved, exempt.Status)
		require.Nil(t, exempt.RedactedRequest)
		require.Len(t, exempt.Reasons, 1)
		require.Equal(t, tn.instrs[instrPress].ID, exempt.Reasons[0].InstructionID)
		require.Equal(t, spec.ActionAllow, exempt.Reasons[0].Action)

		// A match outside the Allow match still blocks.
		text := "The Project Falcon press release, and the Project Falcon terms."
		blocked := tn.submit(t, text)
		require.Equal(t, spec.StatusRequiresIntervention, blocked.Status)
		byID := map[string]spec.ReviewReason{}
		for _, r := range blocked.Reasons {
			byID[r.InstructionID] = r
		}
		require.Contains(t, byID, tn.instrs[instrPress].ID)
		mergers, ok := byID[tn.instrs[instrMergers].ID]
		require.True(t, ok, "reasons: %+v", blocked.Reasons)
		require.Len(t, mergers.Matches, 1, "only the match outside the Allow span remains")
		m := mergers.Matches[0]
		require.Equal(t, "Project Falcon", string([]rune(text)[m.Start:m.End]))
		require.Greater(t, m.Start, 30)

		// The Allow exemption does not cover another message.
		other := tn.submit(t, "Project Falcon press release", "Project Falcon")
		require.Equal(t, spec.StatusRequiresIntervention, other.Status)
	})
}

func TestAPIMultipleMessages(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)

		clean := tn.submit(t, "You are helpful.", "hello", "How can I help?", "Tell me a joke.")
		require.Equal(t, spec.StatusApproved, clean.Status)
		require.Len(t, clean.Request.Messages, 4)

		// The last message decides.
		late := tn.submit(t, "You are helpful.", "hello", "How can I help?", "Tell me about project falcon.")
		require.Equal(t, spec.StatusRequiresIntervention, late.Status)
		require.Len(t, late.Reasons, 1)
		require.Equal(t, []spec.MatchSpan{{MessageIndex: 3, Start: 14, End: 28}}, late.Reasons[0].Matches)

		// Matches in several messages, each with its index.
		mixed := tn.submit(t, "salary?", "fine", "IBAN DE89370400440532013000")
		require.Equal(t, spec.StatusChangeRequested, mixed.Status)
		spans := map[string][]spec.MatchSpan{}
		for _, r := range mixed.Reasons {
			spans[r.Title] = r.Matches
		}
		require.Equal(t, map[string][]spec.MatchSpan{
			instrSalaries: {{MessageIndex: 0, Start: 0, End: 6}},
			instrIBAN:     {{MessageIndex: 2, Start: 5, End: 27}},
		}, spans)

		// Redaction in two messages; the one between is left as it is.
		red := tn.submit(t, "from DE89370400440532013000", "nothing here", "to DE12345678901234567890!")
		require.Equal(t, spec.StatusApproved, red.Status)
		require.NotNil(t, red.RedactedRequest)
		var got []string
		for _, m := range red.RedactedRequest.Messages {
			got = append(got, m.Content)
		}
		require.Equal(t, []string{"from [REDACTED]", "nothing here", "to [REDACTED]!"}, got)
		require.Equal(t, "from DE89370400440532013000", red.Request.Messages[0].Content)
	})
}
