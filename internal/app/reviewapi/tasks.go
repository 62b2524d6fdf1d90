package reviewapi

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/spec"
)

// event is a webhook event to record in the transaction of the change.
type event struct {
	typ  string
	task spec.ReviewTask
}

// delivery names one (event, webhook) delivery to queue after the commit.
type delivery struct{ eventID, webhookID, orgID string }

func (s *Service) forUpdate() string {
	if s.db.Dialect == sqldb.Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// inTx runs fn in a transaction, again when it lost to concurrent ones
// (sqldb.DB.InTxRetry); still failing so is answered 503 (apiError).
func (s *Service) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.db.InTxRetry(ctx, fn)
}

func (s *Service) loadTask(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, orgID, id, suffix string) (spec.ReviewTask, error) {
	var body string
	query := `SELECT body FROM reviewapi_tasks WHERE id = $1`
	args := []any{id}
	if orgID != "" {
		query += ` AND org_id = $2`
		args = append(args, orgID)
	}
	err := q.QueryRowContext(ctx, query+suffix, args...).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return spec.ReviewTask{}, fmt.Errorf("task %s: %w", id, ErrTaskNotFound)
	}
	if err != nil {
		return spec.ReviewTask{}, err
	}
	var t spec.ReviewTask
	return t, json.Unmarshal([]byte(body), &t)
}

// TaskOrganisation returns the id of the organisation that has the task id,
// or ErrTaskNotFound: for the administrator's commands, which name a task by
// its id alone.
func (s *Service) TaskOrganisation(ctx context.Context, id string) (string, error) {
	var orgID string
	err := s.db.QueryRowContext(ctx, `SELECT org_id FROM reviewapi_tasks WHERE id = $1`, id).Scan(&orgID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("task %s: %w", id, ErrTaskNotFound)
	}
	return orgID, err
}

// saveTask writes t over its row, if its status is still one of from.
func saveTask(ctx context.Context, tx *sql.Tx, t spec.ReviewTask, from ...string) (bool, error) {
	body, err := json.Marshal(t)
	if err != nil {
		return false, err
	}
	var deadline any
	if !t.ReviewDeadline.IsZero() && t.Status == spec.StatusRequiresIntervention {
		deadline = sqldb.Millis(t.ReviewDeadline.Time)
	}
	args := []any{t.Status, string(body), deadline, sqldb.Millis(t.UpdatedAt.Time), t.ID}
	ph := make([]string, len(from))
	for i, f := range from {
		args = append(args, f)
		ph[i] = fmt.Sprintf("$%d", len(args))
	}
	res, err := tx.ExecContext(ctx, `UPDATE reviewapi_tasks SET status = $1, body = $2, review_deadline = $3, updated_at = $4
		WHERE id = $5 AND status IN (`+strings.Join(ph, ", ")+`)`, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Task returns one task of the organisation.
func (s *Service) Task(ctx context.Context, orgID, id string) (spec.ReviewTask, error) {
	return s.loadTask(ctx, s.db, orgID, id, "")
}

// CreateTask records a task for the key's organisation, sends task.created,
// and evaluates it at once. When evaluation cannot run, the task stays
// pending, is evaluated again in the background, and the error is a
// POLICY_ERROR naming the task.
func (s *Service) CreateTask(ctx context.Context, p org.Principal, c spec.ReviewTaskCreate) (spec.ReviewTask, error) {
	agent, err := s.orgs.Agent(ctx, p.OrganisationID, c.AgentID)
	if errors.Is(err, spec.ErrNotFound) {
		return spec.ReviewTask{}, spec.Invalid("agentId", "agent %s is not one of the organisation's agents", c.AgentID)
	}
	if err != nil {
		return spec.ReviewTask{}, err
	}
	now := s.now()
	req := c.Request
	t := spec.ReviewTask{
		ID: uuid.NewString(), AgentID: agent.ID, Status: spec.StatusPending, Request: &req,
		User: c.User, Metadata: c.Metadata, ExternalID: c.ExternalID,
		CreatedAt: spec.NewTime(now), UpdatedAt: spec.NewTime(now),
	}
	// Evaluate before anything is written: the task then goes from pending
	// through processing to its outcome in one transaction, with its
	// task.created event showing it pending. Only when evaluation cannot run
	// is it stored pending, for the background job.
	created := t
	res, evalErr := s.evaluateRequest(ctx, p.OrganisationID, t)
	var ev *event
	if evalErr == nil {
		timeout, err := s.ReviewTimeout(ctx, p.OrganisationID)
		if err != nil {
			return spec.ReviewTask{}, err
		}
		e := applyOutcome(&t, res, s.now(), timeout)
		ev = &e
	}
	body, err := json.Marshal(t)
	if err != nil {
		return t, err
	}
	var deadline any
	if t.Status == spec.StatusRequiresIntervention {
		deadline = sqldb.Millis(t.ReviewDeadline.Time)
	}
	var queued []delivery
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO reviewapi_tasks (id, org_id, agent_id, status, body, review_deadline, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, t.ID, p.OrganisationID, agent.ID, t.Status, string(body), deadline,
			sqldb.Millis(now), sqldb.Millis(t.UpdatedAt.Time)); err != nil {
			return err
		}
		events := []event{{spec.EventTaskCreated, created}}
		if ev != nil {
			events = append(events, *ev)
		}
		var err error
		queued, err = s.recordEvents(ctx, tx, p.OrganisationID, s.now(), events...)
		return err
	})
	if err != nil {
		return spec.ReviewTask{}, err
	}
	s.queueDeliveries(ctx, queued)
	if evalErr != nil {
		s.queueEvaluation(ctx, t.ID, policy.BackoffOf(evalErr))
		var pe *policyError
		if errors.As(evalErr, &pe) {
			return spec.ReviewTask{}, &spec.Error{Kind: spec.ErrUnprocessable, Extensions: map[string]any{"taskId": t.ID}, Err: evalErr,
				Detail: "The request could not be evaluated against the policy: " + pe.msg + ". The task stays pending and is evaluated again; follow it with GET /review-tasks/" + t.ID + " or webhooks."}
		}
		// Any other failure (the database) leaves the task pending too; the
		// background job evaluates it again.
		return spec.ReviewTask{}, evalErr
	}
	return t, nil
}

// evaluation is the outcome of a task's evaluation: the policy's result,
// or, when overBudget is set, an evaluation that did not fit its budget,
// which sends the task to a person.
type evaluation struct {
	policy.Result
	overBudget *policy.BudgetError
}

// evaluateRequest evaluates the task's request against the instructions
// of its agent. An evaluation over its budget is no error: it is decided
// (fail closed) as requires_intervention.
func (s *Service) evaluateRequest(ctx context.Context, orgID string, t spec.ReviewTask) (evaluation, error) {
	instructions, err := s.orgs.AgentInstructions(ctx, orgID, t.AgentID)
	if err != nil {
		return evaluation{}, err
	}
	set, err := s.cache.Get(t.AgentID, instructions)
	if err != nil {
		return evaluation{}, &policyError{msg: "the agent's instructions do not compile", cause: err}
	}
	texts := make([]string, len(t.Request.Messages))
	for i, m := range t.Request.Messages {
		texts[i] = m.Content
	}
	res, err := set.Evaluate(ctx, texts)
	var over *policy.BudgetError
	if errors.As(err, &over) {
		return evaluation{Result: policy.Result{Outcome: policy.OutcomeRequiresIntervention}, overBudget: over}, nil
	}
	if err != nil {
		return evaluation{Result: res}, &policyError{msg: "evaluation failed", cause: err}
	}
	switch res.Outcome {
	case policy.OutcomeApproved, policy.OutcomeRedacted, policy.OutcomeChangeRequested, policy.OutcomeRequiresIntervention:
		return evaluation{Result: res}, nil
	}
	return evaluation{Result: res}, fmt.Errorf("reviewapi: unknown policy outcome %q", res.Outcome)
}

// budgetComment explains an evaluation over its budget to the reviewer.
func budgetComment(e *policy.BudgetError) string {
	switch {
	case e.Pattern != nil:
		return fmt.Sprintf("Not evaluated: the pattern of instruction %s (%q) %v. Fix the instruction; until then every task of the agent waits for a person.",
			e.InstructionID, e.Title, e.Pattern)
	case e.Matches > 0 && e.InstructionID != "":
		return fmt.Sprintf("The evaluation stopped after more than %s matches (the bound of one evaluation) while matching the pattern of instruction %s (%q): too many to record or to review one by one.",
			thousands(e.Matches), e.InstructionID, e.Title)
	case e.Matches > 0:
		return fmt.Sprintf("The evaluation stopped after more than %s matches (the bound of one evaluation): too many to record or to review one by one.",
			thousands(e.Matches))
	case e.InstructionID != "":
		return fmt.Sprintf("The evaluation exceeded its time budget of %s while matching the pattern of instruction %s (%q).",
			e.Budget, e.InstructionID, e.Title)
	}
	return fmt.Sprintf("The evaluation exceeded its time budget of %s.", e.Budget)
}

// thousands writes n with a comma between groups of three digits.
func thousands(n int) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// applyOutcome moves t to the outcome of its evaluation and returns the
// event to send.
func applyOutcome(t *spec.ReviewTask, res evaluation, now time.Time, timeout time.Duration) event {
	t.Reasons = res.Reasons
	if res.Redacted != nil {
		red := *t.Request
		red.Messages = make([]spec.ReviewMessage, len(t.Request.Messages))
		copy(red.Messages, t.Request.Messages)
		for i := range red.Messages {
			red.Messages[i].Content = res.Redacted[i]
		}
		t.RedactedRequest = &red
	}
	t.UpdatedAt = spec.NewTime(now)
	switch res.Outcome {
	case policy.OutcomeChangeRequested:
		t.Status = spec.StatusChangeRequested
	case policy.OutcomeRequiresIntervention:
		t.Status = spec.StatusRequiresIntervention
		t.ReviewDeadline = spec.NewTime(now.Add(timeout))
		if res.overBudget != nil {
			t.Decision = &spec.ReviewDecision{By: spec.DecidedByPolicy, Reason: spec.ReasonBudget,
				Comment: budgetComment(res.overBudget), DecidedAt: spec.NewTime(now)}
		}
		return event{spec.EventTaskRequiresIntervention, *t}
	default:
		t.Status = spec.StatusApproved
	}
	t.Decision = &spec.ReviewDecision{By: spec.DecidedByPolicy, DecidedAt: spec.NewTime(now)}
	if t.Status == spec.StatusApproved && res.HighExemption {
		t.Decision.Reason = spec.ReasonExemption
	}
	t.CompletedAt = spec.NewTime(now)
	return event{spec.EventTaskCompleted, *t}
}

// policyError is an evaluation that could not run.
type policyError struct {
	msg   string
	cause error
}

func (e *policyError) Error() string { return "policy error: " + e.msg }
func (e *policyError) Unwrap() error { return e.cause }

// evaluate moves a pending task through processing to the outcome of its
// policy. A task already past pending is returned as it is.
func (s *Service) evaluate(ctx context.Context, id string) (spec.ReviewTask, error) {
	var t spec.ReviewTask
	var orgID string
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if err = tx.QueryRowContext(ctx, `SELECT org_id FROM reviewapi_tasks WHERE id = $1`, id).Scan(&orgID); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("task %s: %w", id, ErrTaskNotFound)
		} else if err != nil {
			return err
		}
		if t, err = s.loadTask(ctx, tx, "", id, s.forUpdate()); err != nil || t.Status != spec.StatusPending {
			return err
		}
		t.Status, t.UpdatedAt = spec.StatusProcessing, spec.NewTime(s.now())
		_, err = saveTask(ctx, tx, t, spec.StatusPending)
		return err
	})
	if err != nil || t.Status != spec.StatusProcessing {
		return t, err
	}
	res, err := s.evaluateRequest(ctx, orgID, t)
	if err != nil {
		return t, s.backToPending(ctx, t, err)
	}
	timeout, err := s.ReviewTimeout(ctx, orgID)
	if err != nil {
		return t, s.backToPending(ctx, t, err)
	}
	now := s.now()
	ev := applyOutcome(&t, res, now, timeout)
	var queued []delivery
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		ok, err := saveTask(ctx, tx, t, spec.StatusProcessing)
		if err != nil || !ok {
			return err
		}
		queued, err = s.recordEvents(ctx, tx, orgID, now, ev)
		return err
	})
	if err != nil {
		return t, err
	}
	s.queueDeliveries(ctx, queued)
	cur, err := s.Task(ctx, orgID, id)
	if err == nil && cur.Status == spec.StatusPending {
		// The sweep took the task back from this slow evaluation; the
		// job evaluates it again.
		return cur, fmt.Errorf("task %s went back to pending during its evaluation", id)
	}
	return cur, err
}

// backToPending returns a task whose evaluation failed to pending, so it is
// evaluated again, and returns cause.
func (s *Service) backToPending(ctx context.Context, t spec.ReviewTask, cause error) error {
	t.Status, t.UpdatedAt = spec.StatusPending, spec.NewTime(s.now())
	t.Reasons, t.RedactedRequest = nil, nil
	err := s.inTx(context.WithoutCancel(ctx), func(tx *sql.Tx) error {
		_, err := saveTask(ctx, tx, t, spec.StatusProcessing)
		if err == nil {
			_, err = tx.ExecContext(ctx, `UPDATE reviewapi_tasks SET evaluations = evaluations + 1 WHERE id = $1`, t.ID)
		}
		return err
	})
	return errors.Join(cause, err)
}

// TaskQuery selects a page of tasks.
type TaskQuery struct {
	Status   string
	From, To time.Time // zero: unbounded; From inclusive, To exclusive
	Limit    int       // 1..100
	Offset   int
	// IncludeRequest keeps each task's request and redactedRequest, which
	// a list leaves out by default (?include=request).
	IncludeRequest bool
}

// MaxPageBytes bounds the JSON of the tasks of one page of GET
// /review-tasks: a page stops at the first task that takes it past 1 MiB
// (it always holds one task), and nextOffset names where the next page
// starts. With a task's request of up to 1 MiB, a page of 100 would
// otherwise cost 100 MiB to build.
const MaxPageBytes = 1 << 20

// ListTasks returns a page of the organisation's tasks, newest first: at
// most q.Limit tasks and, past the first, at most [MaxPageBytes] of their
// JSON. Without q.IncludeRequest each task's request and redactedRequest
// are left out.
func (s *Service) ListTasks(ctx context.Context, orgID string, q TaskQuery) (spec.ReviewTaskList, error) {
	page, err := s.taskPageOf(ctx, orgID, q, MaxPageBytes)
	if err != nil {
		return spec.ReviewTaskList{}, err
	}
	list := spec.ReviewTaskList{Data: make([]spec.ReviewTask, len(page.items)), Total: page.total, Limit: q.Limit,
		Offset: q.Offset, NextOffset: page.nextOffset}
	for i, it := range page.items {
		if err := json.Unmarshal(it, &list.Data[i]); err != nil {
			return spec.ReviewTaskList{}, err
		}
	}
	return list, nil
}

// taskPage is a page of tasks as the JSON of each, for the handler to
// write without encoding them again.
type taskPage struct {
	items      []json.RawMessage
	total      int
	nextOffset *int
}

// taskPageOf reads a page of tasks, one row at a time, keeping the JSON of
// each (without the request unless q.IncludeRequest), and stops at q.Limit
// tasks or at the first task past budget bytes.
func (s *Service) taskPageOf(ctx context.Context, orgID string, q TaskQuery, budget int) (taskPage, error) {
	var page taskPage
	where, args := []string{"org_id = $1"}, []any{orgID}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if q.Status != "" {
		add("status = $%d", q.Status)
	}
	if !q.From.IsZero() {
		add("created_at >= $%d", sqldb.MillisCeil(q.From))
	}
	if !q.To.IsZero() {
		add("created_at < $%d", sqldb.MillisCeil(q.To))
	}
	cond := strings.Join(where, " AND ")
	opts := &sql.TxOptions{ReadOnly: true}
	if s.db.Dialect == sqldb.Postgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return page, err
	}
	defer func() { _ = tx.Rollback() }()
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM reviewapi_tasks WHERE `+cond, args...).Scan(&page.total); err != nil {
		return page, err
	}
	if q.Offset >= page.total {
		return page, nil
	}
	n := len(args)
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT body FROM reviewapi_tasks WHERE %s
		ORDER BY created_at DESC, id LIMIT $%d OFFSET $%d`, cond, n+1, n+2), append(args, q.Limit, q.Offset)...)
	if err != nil {
		return page, err
	}
	defer rows.Close()
	size := 0
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return page, err
		}
		item := json.RawMessage(body)
		if !q.IncludeRequest {
			if item, err = withoutRequest(body); err != nil {
				return page, err
			}
		}
		if len(page.items) > 0 && size+len(item) > budget {
			break
		}
		size += len(item) + 1
		page.items = append(page.items, item)
	}
	if err := rows.Err(); err != nil {
		return page, err
	}
	if next := q.Offset + len(page.items); next < page.total {
		page.nextOffset = &next
	}
	return page, nil
}

// withoutRequest returns the stored JSON of a task without its request
// and redactedRequest.
func withoutRequest(body []byte) (json.RawMessage, error) {
	var t spec.ReviewTask
	if err := json.Unmarshal(body, &t); err != nil {
		return nil, fmt.Errorf("stored task: %w", err)
	}
	t.Request, t.RedactedRequest = nil, nil
	return json.Marshal(t)
}

// Queue returns the organisation's tasks waiting for a person, oldest
// first: the reviewer's queue. It reads them all; [Service.QueuePage]
// reads a bounded page.
func (s *Service) Queue(ctx context.Context, orgID string) ([]spec.ReviewTask, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT body FROM reviewapi_tasks WHERE org_id = $1 AND status = $2
		ORDER BY created_at, id`, orgID, spec.StatusRequiresIntervention)
	if err != nil {
		return nil, err
	}
	return sqldb.ScanJSON[spec.ReviewTask](rows)
}

// queueEvaluation asks the job queue to evaluate a pending task again,
// after wait (the Retry-After of a semantic matcher's endpoint, at most
// maxEvaluationBackoff) or at once.
func (s *Service) queueEvaluation(ctx context.Context, id string, wait time.Duration) {
	var opts *river.InsertOpts
	if wait > 0 {
		opts = &river.InsertOpts{ScheduledAt: time.Now().Add(min(wait, maxEvaluationBackoff))}
	}
	if err := s.cfg.Jobs.Enqueue(context.WithoutCancel(ctx), evaluateArgs{TaskID: id}, opts); err != nil {
		s.cfg.Logger.Error("queue evaluation", "task", id, "error", err) // the sweep picks it up
	}
}
