package reviewapi

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/internal/infra/reqcheck"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// The choices of a person deciding a task waiting for one: the values of
// [Decision.Choice], and of decision.choice in the task.
const (
	DecisionApprove         = spec.ChoiceApprove
	DecisionApproveRedacted = spec.ChoiceApproveRedacted
	DecisionReject          = spec.ChoiceReject
	DecisionRequestChanges  = spec.ChoiceRequestChanges
)

// ReasonTimeout is decision.reason of a task decided by the review timeout.
const ReasonTimeout = spec.ReasonTimeout

// ErrNotReviewer is the error of a decision by someone who may not make it:
// no user, a disabled user, a user of another organisation than the task's,
// or one whose role is neither Reviewer nor Administrator. It is of kind
// spec.ErrForbidden.
var ErrNotReviewer = fmt.Errorf("only a Reviewer or an Administrator of the task's organisation may decide it: %w", spec.ErrForbidden)

// ErrNoProposal is the error of approve-redacted on a task whose policy
// proposed no redacted copy. It is of kind spec.ErrInvalid.
var ErrNoProposal = fmt.Errorf("the task has no redacted copy to approve: choose approve, reject or request-changes: %w", spec.ErrInvalid)

// Decision is a person's decision on a task waiting for one.
type Decision struct {
	// Choice is approve (the request as sent), approve-redacted (the
	// redacted copy the policy proposed, when it did), reject or
	// request-changes.
	Choice string
	// UserID is the person deciding: a user of the task's organisation, not
	// disabled, with the Reviewer or Administrator role.
	UserID string
	// Comment is kept in decision.comment for the requester.
	Comment string
}

// Validate checks d's choice: approve, approve-redacted, reject or
// request-changes. A failure is a *spec.Error of kind spec.ErrInvalid
// naming the field decision.
func (d Decision) Validate() error {
	if statusOfChoice(d.Choice) == "" {
		return reqcheck.Invalid("decision", "must be approve, approve-redacted, reject or request-changes, got %q", d.Choice)
	}
	return nil
}

// statusOfChoice is the status a choice leads to.
func statusOfChoice(choice string) string {
	switch choice {
	case DecisionApprove, DecisionApproveRedacted:
		return spec.StatusApproved
	case DecisionReject:
		return spec.StatusRejected
	case DecisionRequestChanges:
		return spec.StatusChangeRequested
	}
	return ""
}

// Decide records a person's decision d, which must pass its Validate, on
// the organisation's task id, waiting for one (requires_intervention). A
// task of another organisation is ErrTaskNotFound. The person must be a user
// of the organisation with the Reviewer or Administrator role, not disabled
// (else ErrNotReviewer); a task in any other state, or whose review
// deadline has passed, is ErrFinal.
//
// The task's decision names the person (reviewer: their email, reviewerId:
// their id) and the choice. Approving as sent removes the policy's redacted
// proposal from the task, so that a client sending "redactedRequest when
// present" sends what the person approved; approving the redacted copy keeps
// it. The organisation's audit trail records the decision with the person,
// in the same transaction as the change and its task.completed event: of two
// people deciding at once, one wins and the other gets ErrFinal, and nothing
// is half written.
func (s *Service) Decide(ctx context.Context, orgID, id string, d Decision) (spec.ReviewTask, error) {
	if err := d.Validate(); err != nil {
		return spec.ReviewTask{}, err
	}
	status := statusOfChoice(d.Choice)
	orgID = strings.ToLower(orgID)
	var t spec.ReviewTask
	var queued []delivery
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if t, err = s.loadTask(ctx, tx, orgID, id, s.forUpdate()); err != nil {
			return err
		}
		u, err := s.reviewer(ctx, orgID, d.UserID)
		if err != nil {
			return err
		}
		if t.Status != spec.StatusRequiresIntervention {
			return fmt.Errorf("task %s is %s, not waiting for a person: %w", id, t.Status, ErrFinal)
		}
		now := s.now()
		if !now.Before(t.ReviewDeadline.Time) {
			return fmt.Errorf("task %s: its review deadline %s has passed; the review timeout decides it: %w", id, t.ReviewDeadline, ErrFinal)
		}
		switch d.Choice {
		case DecisionApproveRedacted:
			if t.RedactedRequest == nil {
				return fmt.Errorf("task %s: %w", id, ErrNoProposal)
			}
		case DecisionApprove:
			t.RedactedRequest = nil
		}
		t.Status, t.UpdatedAt, t.CompletedAt = status, spec.NewTime(now), spec.NewTime(now)
		t.Decision = &spec.ReviewDecision{By: spec.DecidedByReviewer, Reviewer: u.Email, ReviewerID: u.ID,
			Choice: d.Choice, Comment: d.Comment, DecidedAt: spec.NewTime(now)}
		ok, err := saveTask(ctx, tx, t, spec.StatusRequiresIntervention)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("task %s changed meanwhile: %w", id, ErrFinal)
		}
		if err := s.orgs.RecordAuditTx(ctx, tx, orgID, now, u.Actor(), AuditTaskDecided, "review_task", t.ID,
			map[string]string{"status": spec.StatusRequiresIntervention},
			map[string]string{"status": t.Status, "choice": d.Choice, "comment": d.Comment}); err != nil {
			return err
		}
		queued, err = s.recordEvents(ctx, tx, orgID, now, event{spec.EventTaskCompleted, t})
		return err
	})
	if err != nil {
		return spec.ReviewTask{}, err
	}
	s.queueDeliveries(ctx, queued)
	return t, nil
}

// AuditTaskDecided is the audit action of a decision.
const AuditTaskDecided = "review_task.decided"

// reviewer returns the user userID when they may decide the tasks of the
// organisation orgID, else ErrNotReviewer.
func (s *Service) reviewer(ctx context.Context, orgID, userID string) (people.User, error) {
	if _, ok := ident.CanonicalUUID(userID); !ok {
		return people.User{}, fmt.Errorf("user %q: %w", userID, ErrNotReviewer)
	}
	u, err := s.people.User(ctx, orgID, userID)
	switch {
	case errors.Is(err, spec.ErrNotFound):
		return u, fmt.Errorf("user %s is not a person of the task's organisation: %w", userID, ErrNotReviewer)
	case err != nil:
		return u, err
	case u.DisabledAt != nil:
		return u, fmt.Errorf("user %s is disabled: %w", u.Email, ErrNotReviewer)
	case u.Role != people.RoleReviewer && u.Role != people.RoleAdministrator:
		return u, fmt.Errorf("user %s has the role %s: %w", u.Email, u.Role, ErrNotReviewer)
	}
	return u, nil
}

// What the review timeout does to a task no person decided in time: the
// values of [Settings.TimeoutOutcome].
const (
	// TimeoutReject rejects the task (the default).
	TimeoutReject = "reject"
	// TimeoutApprove approves it: the redacted copy when the policy proposed
	// one, else the request as sent.
	TimeoutApprove = "approve"
)

// Settings are an organisation's review settings.
type Settings struct {
	// ReviewTimeout is how long a task waits for a person. 0 in
	// [Service.SetSettings] means the service's default
	// (Config.ReviewTimeout); [Service.Settings] returns the timeout in
	// force.
	ReviewTimeout time.Duration `json:"-"`
	// TimeoutOutcome is what the timeout does: TimeoutReject (the default)
	// or TimeoutApprove.
	TimeoutOutcome string `json:"timeoutOutcome"`
	// Default is true when the organisation has not set its own timeout
	// ([Service.Settings] only).
	DefaultTimeout bool `json:"defaultTimeout"`
}

// MarshalJSON writes the timeout in seconds and as a Go duration.
func (st Settings) MarshalJSON() ([]byte, error) {
	type plain Settings
	return json.Marshal(struct {
		ReviewTimeout        string `json:"reviewTimeout"`
		ReviewTimeoutSeconds int64  `json:"reviewTimeoutSeconds"`
		plain
	}{st.ReviewTimeout.String(), int64(st.ReviewTimeout / time.Second), plain(st)})
}

// Limits of [Settings.ReviewTimeout].
const (
	MinReviewTimeout = time.Minute
	MaxReviewTimeout = 90 * 24 * time.Hour
)

// AuditSettingsChanged is the audit action of a change of the review
// settings.
const AuditSettingsChanged = "review_settings.changed"

// Settings returns the organisation's review settings, with the timeout in
// force.
func (s *Service) Settings(ctx context.Context, orgID string) (Settings, error) {
	st := Settings{ReviewTimeout: s.cfg.ReviewTimeout, TimeoutOutcome: TimeoutReject, DefaultTimeout: true}
	var ms int64
	var outcome string
	err := s.db.QueryRowContext(ctx, `SELECT review_timeout_ms, timeout_outcome FROM reviewapi_settings WHERE org_id = $1`, orgID).Scan(&ms, &outcome)
	if errors.Is(err, sql.ErrNoRows) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if ms > 0 {
		st.ReviewTimeout, st.DefaultTimeout = time.Duration(ms)*time.Millisecond, false
	}
	if outcome == TimeoutApprove {
		st.TimeoutOutcome = TimeoutApprove
	}
	return st, nil
}

// SetSettings sets the organisation's review settings and records the
// change in its audit trail, with actor. A ReviewTimeout of 0 restores the
// service's default; otherwise it is MinReviewTimeout to MaxReviewTimeout.
// An empty TimeoutOutcome is TimeoutReject. The new timeout applies to tasks
// that start waiting afterwards; a task already waiting keeps its deadline.
func (s *Service) SetSettings(ctx context.Context, orgID string, st Settings, actor org.Actor) (Settings, error) {
	if st.TimeoutOutcome == "" {
		st.TimeoutOutcome = TimeoutReject
	}
	switch {
	case st.ReviewTimeout != 0 && (st.ReviewTimeout < MinReviewTimeout || st.ReviewTimeout > MaxReviewTimeout):
		return Settings{}, reqcheck.Invalid("reviewTimeout", "must be from %s to %s (or 0 for the service's default), got %s",
			MinReviewTimeout, MaxReviewTimeout, st.ReviewTimeout)
	case st.TimeoutOutcome != TimeoutReject && st.TimeoutOutcome != TimeoutApprove:
		return Settings{}, reqcheck.Invalid("timeoutOutcome", "must be reject or approve, got %q", st.TimeoutOutcome)
	}
	if _, err := s.orgs.Organisation(ctx, orgID); err != nil {
		return Settings{}, err
	}
	before, err := s.Settings(ctx, orgID)
	if err != nil {
		return Settings{}, err
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM reviewapi_settings WHERE org_id = $1`, orgID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO reviewapi_settings (org_id, review_timeout_ms, timeout_outcome) VALUES ($1, $2, $3)`,
			orgID, st.ReviewTimeout.Milliseconds(), st.TimeoutOutcome); err != nil {
			return err
		}
		after := st
		if after.ReviewTimeout == 0 {
			after.ReviewTimeout, after.DefaultTimeout = s.cfg.ReviewTimeout, true
		}
		return s.orgs.RecordAuditTx(ctx, tx, orgID, s.now(), actor, AuditSettingsChanged, "review_settings", orgID, before, after)
	})
	if err != nil {
		return Settings{}, err
	}
	return s.Settings(ctx, orgID)
}

// ReviewTimeout returns the organisation's review timeout.
func (s *Service) ReviewTimeout(ctx context.Context, orgID string) (time.Duration, error) {
	st, err := s.Settings(ctx, orgID)
	return st.ReviewTimeout, err
}

// SetReviewTimeout sets the organisation's review timeout, keeping its
// timeout outcome; 0 restores the service's default. The change is audited
// as made by the operator.
func (s *Service) SetReviewTimeout(ctx context.Context, orgID string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("review timeout %s is negative", d)
	}
	st, err := s.Settings(ctx, orgID)
	if err != nil {
		return err
	}
	st.ReviewTimeout = d
	_, err = s.SetSettings(ctx, orgID, st, org.Actor{Type: org.ActorAdmin, Name: "operator"})
	return err
}

// SweepTimeouts applies the review timeout to every task whose deadline
// has passed: the organisation's timeout outcome (reject by default, or
// approve) decided by the system with reason timeout, never by a person.
// Each such task sends task.timeout and then task.completed, both carrying
// the task in its final state. It returns how many tasks it decided. The
// service runs it periodically; tests call it with an advanced clock.
func (s *Service) SweepTimeouts(ctx context.Context) (int, error) {
	now := s.now()
	rows, err := s.db.QueryContext(ctx, `SELECT id, org_id FROM reviewapi_tasks WHERE status = $1 AND review_deadline <= $2`,
		spec.StatusRequiresIntervention, sqldb.Millis(now))
	if err != nil {
		return 0, err
	}
	type due struct{ id, org string }
	var tasks []due
	for rows.Next() {
		var d due
		if err := rows.Scan(&d.id, &d.org); err != nil {
			rows.Close()
			return 0, err
		}
		tasks = append(tasks, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	settings := map[string]Settings{}
	n := 0
	for _, d := range tasks {
		st, ok := settings[d.org]
		if !ok {
			if st, err = s.Settings(ctx, d.org); err != nil {
				return n, err
			}
			settings[d.org] = st
		}
		var queued []delivery
		done := false
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			t, err := s.loadTask(ctx, tx, "", d.id, s.forUpdate())
			if err != nil {
				return err
			}
			if t.Status != spec.StatusRequiresIntervention || t.ReviewDeadline.After(now) {
				return nil // decided meanwhile
			}
			timeoutDecision(&t, st.TimeoutOutcome, now)
			ok, err := saveTask(ctx, tx, t, spec.StatusRequiresIntervention)
			if err != nil || !ok {
				return err
			}
			done = true
			queued, err = s.recordEvents(ctx, tx, d.org, now, event{spec.EventTaskTimeout, t}, event{spec.EventTaskCompleted, t})
			return err
		})
		if err != nil {
			return n, err
		}
		if done {
			n++
			s.queueDeliveries(ctx, queued)
		}
	}
	return n, nil
}

// timeoutDecision moves t, whose review deadline passed, to the outcome of
// the timeout, decided by the system.
func timeoutDecision(t *spec.ReviewTask, outcome string, now time.Time) {
	choice := DecisionReject
	if outcome == TimeoutApprove {
		choice = DecisionApprove
		if t.RedactedRequest != nil {
			choice = DecisionApproveRedacted
		}
	}
	t.Status, t.UpdatedAt, t.CompletedAt = statusOfChoice(choice), spec.NewTime(now), spec.NewTime(now)
	t.Decision = &spec.ReviewDecision{By: spec.DecidedBySystem, Reason: ReasonTimeout, Choice: choice, DecidedAt: spec.NewTime(now)}
}
