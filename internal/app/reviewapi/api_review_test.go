package reviewapi_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/webhooktest"
	"github.com/aiusage/kit/spec"
)

// instrCards is a High Block instruction that allows redaction: a match
// waits for a person, who is offered the redacted copy.
const instrCards = "Card numbers"

func (tn *tenant) addCards(t *testing.T) spec.Instruction {
	t.Helper()
	in := tn.addInstruction(tn.agent.ID, spec.InstructionCreate{Title: instrCards,
		Trigger: spec.RegexTrigger(`\b\d{4}-\d{4}-\d{4}-\d{4}\b`, true), Action: spec.ActionBlock,
		Criticality: spec.CriticalityHigh, AllowRedaction: true})
	tn.instrs[instrCards] = in
	return in
}

// auditOf returns the organisation's audit records of action.
func (tn *tenant) auditOf(t *testing.T, action string) []org.AuditRecord {
	t.Helper()
	all, err := tn.h.orgs.Audit(t.Context(), tn.org.ID, 0, 0)
	require.NoError(t, err)
	var out []org.AuditRecord
	for _, a := range all {
		if a.Action == action {
			out = append(out, a)
		}
	}
	return out
}

// A High Block instruction escalates to a person even when it allows
// redaction; the redacted copy is the proposal, and the decision says which
// version the person approved.
func TestAPIHighRedactionWaitsForAPerson(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		cards := tn.addCards(t)
		rcv := webhooktest.NewReceiver(t, "")
		tn.register(t, rcv, spec.EventTaskRequiresIntervention, spec.EventTaskCompleted)

		const text = "Charge 4111-1111-1111-1111 for the order"
		submit := func() spec.ReviewTask {
			task := tn.submit(t, text)
			require.Equal(t, spec.StatusRequiresIntervention, task.Status, "High escalates to a person")
			require.Nil(t, task.Decision)
			require.NotNil(t, task.RedactedRequest, "the proposal")
			require.Equal(t, "Charge [REDACTED] for the order", task.RedactedRequest.Messages[0].Content)
			require.Equal(t, text, task.Request.Messages[0].Content)
			require.Len(t, task.Reasons, 1)
			require.Equal(t, cards.ID, task.Reasons[0].InstructionID)
			require.Equal(t, spec.CriticalityHigh, task.Reasons[0].Criticality)
			return task
		}
		asRedacted, asSent, rejected, changes := submit(), submit(), submit(), submit()
		h.clock.Advance(time.Minute)

		got, err := tn.decide(asRedacted.ID, reviewapi.DecisionApproveRedacted, "masked is fine")
		require.NoError(t, err)
		require.Equal(t, spec.StatusApproved, got.Status)
		require.Equal(t, asRedacted.RedactedRequest, got.RedactedRequest, "the approved version")
		require.Equal(t, reviewapi.DecisionApproveRedacted, got.Decision.Choice)

		got, err = tn.decide(asSent.ID, reviewapi.DecisionApprove, "the customer asked for it")
		require.NoError(t, err)
		require.Equal(t, spec.StatusApproved, got.Status)
		require.Nil(t, got.RedactedRequest, "approved as sent: no redacted copy to mislead a client")
		require.Equal(t, reviewapi.DecisionApprove, got.Decision.Choice)

		got, err = tn.decide(rejected.ID, reviewapi.DecisionReject, "")
		require.NoError(t, err)
		require.Equal(t, spec.StatusRejected, got.Status)
		require.Equal(t, reviewapi.DecisionReject, got.Decision.Choice)

		got, err = tn.decide(changes.ID, reviewapi.DecisionRequestChanges, "drop the card number")
		require.NoError(t, err)
		require.Equal(t, spec.StatusChangeRequested, got.Status)
		require.Equal(t, reviewapi.DecisionRequestChanges, got.Decision.Choice)

		for _, task := range []spec.ReviewTask{asRedacted, asSent, rejected, changes} {
			got := tn.get(t, task.ID)
			require.Equal(t, spec.DecidedByReviewer, got.Decision.By)
			require.Equal(t, tn.reviewer.Email, got.Decision.Reviewer)
			require.Equal(t, tn.reviewer.ID, got.Decision.ReviewerID)
		}
		byTask := eventsOf(t, waitAcks(t, rcv, 8))
		require.NotNil(t, byTask[asRedacted.ID][spec.EventTaskRequiresIntervention][0].Task.RedactedRequest,
			"the receiver of task.requires_intervention sees the proposal")
		require.Equal(t, reviewapi.DecisionApproveRedacted, byTask[asRedacted.ID][spec.EventTaskCompleted][0].Task.Decision.Choice)
		require.Nil(t, byTask[asSent.ID][spec.EventTaskCompleted][0].Task.RedactedRequest)

		// A task with nothing redactable has no proposal to approve.
		falcon := tn.submit(t, "Project Falcon")
		require.Nil(t, falcon.RedactedRequest)
		_, err = tn.decide(falcon.ID, reviewapi.DecisionApproveRedacted, "")
		require.ErrorIs(t, err, reviewapi.ErrNoProposal)
		require.ErrorIs(t, err, spec.ErrInvalid)
		require.Equal(t, falcon, tn.get(t, falcon.ID), "nothing changed")

		// A Low Block that allows redaction still approves with the
		// redacted copy and no person.
		iban := tn.submit(t, "Refund DE89370400440532013000")
		require.Equal(t, spec.StatusApproved, iban.Status)
		require.Equal(t, spec.DecidedByPolicy, iban.Decision.By)
		require.NotNil(t, iban.RedactedRequest)
	})
}

// An Allow instruction of High criticality that exempts what a Block
// instruction matched is a person-level exemption: the task says so.
func TestAPIHighAllowIsAPersonLevelExemption(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		legal := tn.addInstruction(tn.agent.ID, spec.InstructionCreate{Title: "Legal may discuss Falcon",
			Trigger: spec.StringMatchTrigger([]string{"legal review of Project Falcon"}, false), Action: spec.ActionAllow,
			Criticality: spec.CriticalityHigh})
		mergers, press := tn.instrs[instrMergers], tn.instrs[instrPress]

		got := tn.submit(t, "Prepare the legal review of Project Falcon")
		require.Equal(t, spec.StatusApproved, got.Status)
		require.Equal(t, &spec.ReviewDecision{By: spec.DecidedByPolicy, Reason: spec.ReasonExemption, DecidedAt: got.CreatedAt}, got.Decision)
		require.Len(t, got.Reasons, 1)
		require.Equal(t, legal.ID, got.Reasons[0].InstructionID)
		require.Equal(t, []string{mergers.ID}, got.Reasons[0].Exempted)

		// A Low Allow exemption lists what it exempted; it is no
		// person-level exemption.
		got = tn.submit(t, "Draft the Project Falcon press release")
		require.Equal(t, spec.StatusApproved, got.Status)
		require.Empty(t, got.Decision.Reason)
		require.Equal(t, press.ID, got.Reasons[0].InstructionID)
		require.Equal(t, []string{mergers.ID}, got.Reasons[0].Exempted)

		// Where the exemption leaves a Block match, the Block decides.
		got = tn.submit(t, "Prepare the legal review of Project Falcon. Project Falcon closes in May.")
		require.Equal(t, spec.StatusRequiresIntervention, got.Status)
		require.Nil(t, got.Decision)

		// The High Allow matching alone exempts nothing.
		got = tn.submit(t, "legal review of Project Falcon")
		require.Equal(t, spec.ReasonExemption, got.Decision.Reason)
		got = tn.submit(t, "hello")
		require.Empty(t, got.Reasons)
		require.Empty(t, got.Decision.Reason)
	})
}

// Decisions come from the people of the task's organisation with the
// Reviewer or Administrator role; anyone else is refused and nothing
// changes.
func TestAPIOnlyReviewersOfTheOrganisationDecide(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		other := h.newTenant("Globex", "", 0)
		rcv := webhooktest.NewReceiver(t, "")
		tn.register(t, rcv, spec.EventTaskCompleted)
		adminUser := tn.newUser("ada", people.RoleAdministrator)
		gone := tn.newUser("gone", people.RoleReviewer)
		_, err := h.people.DisableUser(t.Context(), tn.org.ID, gone.Email, admin)
		require.NoError(t, err)

		task := tn.submit(t, "Project Falcon")
		for name, userID := range map[string]string{
			"another organisation's reviewer": other.reviewer.ID,
			"a disabled reviewer":             gone.ID,
			"an unknown user":                 uuid.NewString(),
			"no user":                         "",
			"not an id":                       "ada@example.com",
		} {
			t.Run(name, func(t *testing.T) {
				_, err := h.service().Decide(t.Context(), tn.org.ID, task.ID, reviewapi.Decision{Choice: reviewapi.DecisionApprove, UserID: userID})
				require.ErrorIs(t, err, reviewapi.ErrNotReviewer)
				require.ErrorIs(t, err, spec.ErrForbidden)
			})
		}
		require.Equal(t, task, tn.get(t, task.ID), "nothing changed")
		require.Empty(t, tn.auditOf(t, reviewapi.AuditTaskDecided))
		require.Empty(t, other.auditOf(t, reviewapi.AuditTaskDecided))

		_, err = h.service().Decide(t.Context(), other.org.ID, task.ID, reviewapi.Decision{Choice: reviewapi.DecisionApprove, UserID: other.reviewer.ID})
		require.ErrorIs(t, err, reviewapi.ErrTaskNotFound, "a task of another organisation is unknown")

		// The other organisation's reviewer cannot decide it, but an
		// Administrator of the task's organisation can.
		got, err := h.service().Decide(t.Context(), tn.org.ID, task.ID, reviewapi.Decision{Choice: reviewapi.DecisionReject, UserID: adminUser.ID, Comment: "no"})
		require.NoError(t, err)
		require.Equal(t, adminUser.Email, got.Decision.Reviewer)
		require.Equal(t, adminUser.ID, got.Decision.ReviewerID)

		audit := tn.auditOf(t, reviewapi.AuditTaskDecided)
		require.Len(t, audit, 1)
		require.Equal(t, org.Actor{Type: org.ActorUser, ID: adminUser.ID, Name: adminUser.Name}, audit[0].Actor)
		require.Equal(t, task.ID, audit[0].ResourceID)
		require.JSONEq(t, `{"status":"rejected","choice":"reject","comment":"no"}`, string(audit[0].After))
		acks := waitAcks(t, rcv, 1)
		require.Len(t, acks, 1, "one task.completed, from the one decision made")
	})
}

// Every transition of the state machine, and every forbidden one, from
// each state a task can be in (pending and processing are covered with a
// semantic matcher under control in TestAPIPolicyErrorKeepsTaskPendingThenEvaluates
// and TestAPIProcessingIsVisible).
func TestAPIStateMachine(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		tn.addCards(t)
		svc := h.service()

		// Evaluation: pending -> processing -> one of three outcomes, in
		// one request.
		for text, want := range map[string]string{
			"hello":                          spec.StatusApproved,
			"Refund DE89370400440532013000":  spec.StatusApproved,
			"What is my salary?":             spec.StatusChangeRequested,
			"Project Falcon":                 spec.StatusRequiresIntervention,
			"Pay with 4111-1111-1111-1111":   spec.StatusRequiresIntervention,
			"salary of Project Falcon staff": spec.StatusRequiresIntervention,
		} {
			require.Equal(t, want, tn.submit(t, text).Status, text)
		}

		type waiting struct {
			text     string
			proposal bool
		}
		tasks := func(w waiting) spec.ReviewTask { return tn.submit(t, w.text) }
		plain, redactable := waiting{"Project Falcon", false}, waiting{"Pay with 4111-1111-1111-1111", true}

		// requires_intervention -> each decision.
		for _, c := range []struct {
			from   waiting
			choice string
			want   string
			err    error
		}{
			{plain, reviewapi.DecisionApprove, spec.StatusApproved, nil},
			{plain, reviewapi.DecisionReject, spec.StatusRejected, nil},
			{plain, reviewapi.DecisionRequestChanges, spec.StatusChangeRequested, nil},
			{plain, reviewapi.DecisionApproveRedacted, "", reviewapi.ErrNoProposal},
			{plain, "maybe", "", spec.ErrInvalid},
			{plain, "", "", spec.ErrInvalid},
			{redactable, reviewapi.DecisionApprove, spec.StatusApproved, nil},
			{redactable, reviewapi.DecisionApproveRedacted, spec.StatusApproved, nil},
			{redactable, reviewapi.DecisionReject, spec.StatusRejected, nil},
			{redactable, reviewapi.DecisionRequestChanges, spec.StatusChangeRequested, nil},
		} {
			task := tasks(c.from)
			got, err := tn.decide(task.ID, c.choice, "")
			if c.err != nil {
				require.ErrorIs(t, err, c.err, "%s on %q", c.choice, c.from.text)
				require.Equal(t, task, tn.get(t, task.ID))
				continue
			}
			require.NoError(t, err, "%s on %q", c.choice, c.from.text)
			require.Equal(t, c.want, got.Status)
			require.Equal(t, c.want, tn.get(t, task.ID).Status)
		}

		// requires_intervention -> the timeout outcome, by the system (in
		// an organisation of its own, whose only waiting task is the one
		// timing out).
		tt := h.newTenant("Timeouts", "", 0)
		tt.addCards(t)
		for _, c := range []struct {
			outcome string
			from    waiting
			status  string
			choice  string
		}{
			{reviewapi.TimeoutReject, plain, spec.StatusRejected, reviewapi.DecisionReject},
			{reviewapi.TimeoutReject, redactable, spec.StatusRejected, reviewapi.DecisionReject},
			{reviewapi.TimeoutApprove, plain, spec.StatusApproved, reviewapi.DecisionApprove},
			{reviewapi.TimeoutApprove, redactable, spec.StatusApproved, reviewapi.DecisionApproveRedacted},
		} {
			_, err := svc.SetSettings(t.Context(), tt.org.ID, reviewapi.Settings{ReviewTimeout: time.Hour, TimeoutOutcome: c.outcome}, admin)
			require.NoError(t, err)
			task := tt.submit(t, c.from.text)
			h.clock.Advance(time.Hour)
			n, err := svc.SweepTimeouts(t.Context())
			require.NoError(t, err)
			// The job queue's own sweep (run once on start, which on
			// PostgreSQL waits for a leader to be elected) may come first
			// and decide it: then this one finds nothing.
			require.LessOrEqual(t, n, 1)
			require.Eventually(t, func() bool { return tt.get(t, task.ID).Status == c.status }, 10*time.Second, 10*time.Millisecond,
				"%s %q", c.outcome, c.from.text)
			got := tt.get(t, task.ID)
			require.Equal(t, c.status, got.Status, "%s %q", c.outcome, c.from.text)
			require.Equal(t, &spec.ReviewDecision{By: spec.DecidedBySystem, Reason: spec.ReasonTimeout, Choice: c.choice,
				DecidedAt: got.CompletedAt}, got.Decision)
			require.Equal(t, c.from.proposal, got.RedactedRequest != nil, "the proposal stays, approved or not")
			// A person is too late.
			_, err = tt.decide(task.ID, reviewapi.DecisionApprove, "")
			require.ErrorIs(t, err, reviewapi.ErrFinal)
		}

		// A person deciding exactly at the deadline is too late too, even
		// before the sweep has run.
		late := tt.submit(t, plain.text)
		h.clock.Advance(time.Hour)
		_, err := tt.decide(late.ID, reviewapi.DecisionApprove, "")
		require.ErrorIs(t, err, reviewapi.ErrFinal)
		require.Equal(t, spec.StatusRequiresIntervention, tt.get(t, late.ID).Status)
		n, err := svc.SweepTimeouts(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)

		// Final states: no decision and no timeout moves them.
		r := tn.list(t, "limit=100")
		finals, waits := 0, 0
		for _, task := range r.Data {
			if task.Status == spec.StatusRequiresIntervention {
				waits++
				continue
			}
			finals++
			for _, choice := range []string{reviewapi.DecisionApprove, reviewapi.DecisionApproveRedacted, reviewapi.DecisionReject, reviewapi.DecisionRequestChanges} {
				_, err := tn.decide(task.ID, choice, "")
				require.ErrorIs(t, err, reviewapi.ErrFinal, "%s on a %s task", choice, task.Status)
			}
		}
		require.Equal(t, 10, finals, "three by policy, seven by a person")
		require.Equal(t, 6, waits, "three from the evaluation step, three left by refused decisions")
		h.clock.Advance(100 * 24 * time.Hour)
		n, err = svc.SweepTimeouts(t.Context())
		require.NoError(t, err)
		require.Equal(t, waits, n, "only the tasks still waiting")
		after := tn.list(t, "limit=100")
		for i, task := range r.Data {
			if task.Status != spec.StatusRequiresIntervention {
				require.Equal(t, task, after.Data[i])
			}
		}
	})
}

// The timeout's outcome is an organisation setting; the change is audited.
func TestAPIReviewSettings(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		other := h.newTenant("Globex", "", 0)
		svc := h.service()
		rcv := webhooktest.NewReceiver(t, "")
		tn.register(t, rcv, spec.EventTaskTimeout, spec.EventTaskCompleted)

		st, err := svc.Settings(t.Context(), tn.org.ID)
		require.NoError(t, err)
		require.Equal(t, reviewapi.Settings{ReviewTimeout: reviewapi.DefaultReviewTimeout, TimeoutOutcome: reviewapi.TimeoutReject, DefaultTimeout: true}, st)

		for _, bad := range []struct {
			st    reviewapi.Settings
			field string
		}{
			{reviewapi.Settings{ReviewTimeout: time.Second}, "reviewTimeout"},
			{reviewapi.Settings{ReviewTimeout: 91 * 24 * time.Hour}, "reviewTimeout"},
			{reviewapi.Settings{ReviewTimeout: -time.Hour}, "reviewTimeout"},
			{reviewapi.Settings{TimeoutOutcome: "escalate"}, "timeoutOutcome"},
		} {
			_, err := svc.SetSettings(t.Context(), tn.org.ID, bad.st, admin)
			require.ErrorIs(t, err, spec.ErrInvalid)
			require.ErrorContains(t, err, bad.field)
		}
		_, err = svc.SetSettings(t.Context(), uuid.NewString(), reviewapi.Settings{}, admin)
		require.ErrorIs(t, err, spec.ErrNotFound)
		require.Empty(t, tn.auditOf(t, reviewapi.AuditSettingsChanged))

		st, err = svc.SetSettings(t.Context(), tn.org.ID, reviewapi.Settings{ReviewTimeout: 2 * time.Hour, TimeoutOutcome: reviewapi.TimeoutApprove}, admin)
		require.NoError(t, err)
		require.Equal(t, reviewapi.Settings{ReviewTimeout: 2 * time.Hour, TimeoutOutcome: reviewapi.TimeoutApprove}, st)
		b, err := json.Marshal(st)
		require.NoError(t, err)
		require.JSONEq(t, `{"reviewTimeout":"2h0m0s","reviewTimeoutSeconds":7200,"timeoutOutcome":"approve","defaultTimeout":false}`, string(b))
		audit := tn.auditOf(t, reviewapi.AuditSettingsChanged)
		require.Len(t, audit, 1)
		require.JSONEq(t, `{"reviewTimeout":"24h0m0s","reviewTimeoutSeconds":86400,"timeoutOutcome":"reject","defaultTimeout":true}`, string(audit[0].Before))
		require.JSONEq(t, string(b), string(audit[0].After))

		a := tn.submit(t, "Project Falcon")
		o := other.submit(t, "Project Falcon")
		h.clock.Advance(2 * time.Hour)
		n, err := svc.SweepTimeouts(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n, "the other organisation keeps the default 24 h")
		got := tn.get(t, a.ID)
		require.Equal(t, spec.StatusApproved, got.Status)
		require.Equal(t, spec.DecidedBySystem, got.Decision.By)
		require.Equal(t, spec.StatusRequiresIntervention, other.get(t, o.ID).Status)

		// task.timeout then task.completed, recorded in that order, both
		// with the final status.
		acks := waitAcks(t, rcv, 2)
		byTask := eventsOf(t, acks)
		requireEventTypes(t, byTask, a.ID, spec.EventTaskTimeout, spec.EventTaskCompleted)
		for _, typ := range []string{spec.EventTaskTimeout, spec.EventTaskCompleted} {
			require.Equal(t, got, byTask[a.ID][typ][0].Task)
		}
		ds, err := svc.Deliveries(t.Context(), tn.org.ID)
		require.NoError(t, err)
		require.Equal(t, []string{spec.EventTaskTimeout, spec.EventTaskCompleted}, []string{ds[0].EventType, ds[1].EventType})
		require.Less(t, ds[0].EventID, ds[1].EventID, "event ids sort in the order recorded")

		// Back to the defaults.
		st, err = svc.SetSettings(t.Context(), tn.org.ID, reviewapi.Settings{}, admin)
		require.NoError(t, err)
		require.Equal(t, reviewapi.Settings{ReviewTimeout: reviewapi.DefaultReviewTimeout, TimeoutOutcome: reviewapi.TimeoutReject, DefaultTimeout: true}, st)
	})
}
