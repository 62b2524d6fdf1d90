package org

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"golang.org/x/text/cases"

	"github.com/aiusage/kit/internal/infra/reqcheck"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// searchText is what search matches: the case-folded title and trigger
// text, pattern and values.
func searchText(in spec.Instruction) string {
	parts := []string{in.Title}
	switch in.Trigger.Type {
	case spec.TriggerSemantic:
		parts = append(parts, in.Trigger.Text)
	case spec.TriggerRegex:
		parts = append(parts, in.Trigger.Pattern)
	case spec.TriggerStringMatch:
		parts = append(parts, in.Trigger.Values...)
	}
	for i, p := range parts {
		parts[i] = fold(p)
	}
	return strings.Join(parts, fieldSeparator)
}

// fieldSeparator separates the fields of the search text. fold removes it
// from fields and search terms alike, so no match spans two fields.
const fieldSeparator = "\x1f"

// fold case-folds s for case-insensitive matching. It drops NUL, which
// PostgreSQL text cannot hold (JSON strings may carry it), and the field
// separator.
func fold(s string) string {
	return strings.NewReplacer("\x00", "", fieldSeparator, "").Replace(cases.Fold().String(s))
}

func encodeInstruction(in spec.Instruction) ([]byte, error) {
	if in.UsedBy == nil {
		in.UsedBy = []string{}
	}
	return json.Marshal(in)
}

// CreateInstruction creates an instruction of the organisation from c, which
// must pass its Validate. Agents of usedBy that are not the
// organisation's are spec.ErrInvalid naming usedBy; an agent that already holds
// MaxInstructionsPerAgent instructions is spec.ErrConflict naming the agent; a
// repeated assessmentId is spec.ErrConflict. Nothing is written on error.
func (s *Store) CreateInstruction(ctx context.Context, orgID string, c InstructionCreate, actor Actor) (spec.Instruction, error) {
	c = c.normalised()
	now := s.Now()
	in := spec.Instruction{
		ID: uuid.NewString(), AgentType: c.AgentType, Title: c.Title, Trigger: c.Trigger, Action: c.Action,
		Criticality: c.Criticality, CategoryID: c.CategoryID, UsedBy: c.UsedBy, AllowRedaction: c.AllowRedaction,
		AssessmentID: c.AssessmentID, CreatedAt: spec.NewTime(now), UpdatedAt: spec.NewTime(now),
	}
	if in.UsedBy == nil {
		in.UsedBy = []string{}
	}
	body, err := encodeInstruction(in)
	if err != nil {
		return in, err
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.assign(ctx, tx, orgID, in.UsedBy, nil); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO orgapi_instructions
			(id, org_id, agent_type, trigger_type, action, assessment_id, search_text, body, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
			in.ID, orgID, in.AgentType, in.Trigger.Type, in.Action, in.AssessmentID, searchText(in), string(body), sqldb.Millis(now))
		if sqldb.IsUniqueViolation(err) {
			return assessmentConflict(in.AssessmentID)
		}
		if err != nil {
			return err
		}
		if err := s.link(ctx, tx, in.ID, in.UsedBy, nil); err != nil {
			return err
		}
		return s.audit(ctx, tx, orgID, now, actor, AuditInstructionCreated, "instruction", in.ID, nil, json.RawMessage(body))
	})
	if err != nil {
		return spec.Instruction{}, err
	}
	return in, nil
}

func assessmentConflict(id *string) error {
	a := ""
	if id != nil {
		a = *id
	}
	return &spec.Error{Kind: spec.ErrConflict, Detail: fmt.Sprintf("Assessment %s already produced an instruction.", a),
		Fields: []spec.ProblemField{{Field: "assessmentId", Message: "already used by another instruction"}}}
}

// assign takes the places of an instruction on the agents added and gives
// back those on the agents removed, with one statement for all of them. An
// added agent must be the organisation's (else spec.ErrInvalid naming usedBy) and
// hold fewer than MaxInstructionsPerAgent instructions (else spec.ErrConflict
// naming it): the conditional UPDATE is the guard, so two transactions racing
// for an agent's last place cannot both win.
func (s *Store) assign(ctx context.Context, tx *sql.Tx, orgID string, added, removed []string) error {
	if len(added) == 0 && len(removed) == 0 {
		return nil
	}
	// Read the agents in id order, locking them on PostgreSQL: concurrent
	// transactions then lock agent rows in one order and cannot deadlock
	// (the UPDATE below may visit them in any order).
	lockArgs := []any{orgID}
	rows, err := tx.QueryContext(ctx, `SELECT id FROM orgapi_agents WHERE org_id = $1 AND id IN (`+
		placeholders(&lockArgs, append(slices.Clone(added), removed...))+`) ORDER BY id`+s.forUpdate(), lockArgs...)
	if err != nil {
		return err
	}
	found, err := collectIDs(rows)
	if err != nil {
		return err
	}
	for _, id := range added {
		if !found[id] {
			return reqcheck.Invalid("usedBy", "agent %s is not one of the organisation's agents; GET /organisations/%s/agents lists them", id, orgID)
		}
	}
	args := []any{orgID, spec.MaxInstructionsPerAgent}
	addedPH, removedPH := placeholders(&args, added), placeholders(&args, removed)
	inAdded := "FALSE"
	if addedPH != "" {
		inAdded = "id IN (" + addedPH + ")"
	}
	inAll := addedPH
	if removedPH != "" {
		if inAll != "" {
			inAll += ", "
		}
		inAll += removedPH
	}
	rows, err = tx.QueryContext(ctx, `UPDATE orgapi_agents
		SET instruction_count = instruction_count + CASE WHEN `+inAdded+` THEN 1 ELSE -1 END
		WHERE org_id = $1 AND id IN (`+inAll+`)
		AND CASE WHEN `+inAdded+` THEN instruction_count < $2 ELSE instruction_count > 0 END
		RETURNING id`, args...)
	if err != nil {
		return err
	}
	changed, err := collectIDs(rows)
	if err != nil {
		return err
	}
	for _, id := range added {
		if !changed[id] {
			var name string
			if err := tx.QueryRowContext(ctx, `SELECT name FROM orgapi_agents WHERE id = $1`, id).Scan(&name); err != nil {
				return err
			}
			return agentFull(id, name)
		}
	}
	if len(changed) != len(added)+len(removed) {
		return fmt.Errorf("org: agent counts out of step: %d of %d agents changed", len(changed), len(added)+len(removed))
	}
	return nil
}

// placeholders appends ids to args and returns their placeholders,
// comma-separated.
func placeholders(args *[]any, ids []string) string {
	var b strings.Builder
	for i, id := range ids {
		*args = append(*args, id)
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d", len(*args))
	}
	return b.String()
}

func collectIDs(rows *sql.Rows) (map[string]bool, error) {
	defer rows.Close()
	ids := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids[id] = true
	}
	return ids, rows.Err()
}

func agentFull(id, name string) error {
	return &spec.Error{
		Kind: spec.ErrConflict,
		Detail: fmt.Sprintf("Agent %q (%s) already holds %d instructions. Unassign an instruction from it first.",
			name, id, spec.MaxInstructionsPerAgent),
		Fields: []spec.ProblemField{{Field: "usedBy", Message: fmt.Sprintf("agent %s already holds %d instructions",
			describeAgent(id, name), spec.MaxInstructionsPerAgent)}},
		Extensions: map[string]any{"agent": map[string]string{"id": id, "name": name}},
	}
}

// link writes the instruction's rows of the agent join table, a few
// statements for any number of agents.
func (s *Store) link(ctx context.Context, tx *sql.Tx, instructionID string, added, removed []string) error {
	if len(removed) > 0 {
		args := []any{instructionID}
		if _, err := tx.ExecContext(ctx, `DELETE FROM orgapi_instruction_agents WHERE instruction_id = $1 AND agent_id IN (`+
			placeholders(&args, removed)+`)`, args...); err != nil {
			return err
		}
	}
	for len(added) > 0 {
		batch := added[:min(len(added), 500)]
		added = added[len(batch):]
		args := []any{instructionID}
		var values strings.Builder
		for i, id := range batch {
			args = append(args, id)
			if i > 0 {
				values.WriteString(", ")
			}
			fmt.Fprintf(&values, "($%d, $1)", len(args))
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO orgapi_instruction_agents (agent_id, instruction_id) VALUES `+values.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

func notFoundInstruction(id string) error {
	return &spec.Error{Kind: spec.ErrNotFound, Detail: fmt.Sprintf("No instruction %s in this organisation.", id)}
}

// Instruction returns one instruction of the organisation, or spec.ErrNotFound.
func (s *Store) Instruction(ctx context.Context, orgID, id string) (spec.Instruction, error) {
	var body string
	err := s.db.QueryRowContext(ctx, `SELECT body FROM orgapi_instructions WHERE id = $1 AND org_id = $2`, id, orgID).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return spec.Instruction{}, notFoundInstruction(id)
	}
	if err != nil {
		return spec.Instruction{}, err
	}
	var in spec.Instruction
	return in, json.Unmarshal([]byte(body), &in)
}

// UpdateInstruction applies p, which must pass its Validate, to one
// instruction of the organisation, with the rules of CreateInstruction.
// A patch that changes nothing writes nothing and leaves updatedAt alone.
func (s *Store) UpdateInstruction(ctx context.Context, orgID, id string, p InstructionPatch, actor Actor) (spec.Instruction, error) {
	var out spec.Instruction
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var body string
		err := tx.QueryRowContext(ctx, `SELECT body FROM orgapi_instructions WHERE id = $1 AND org_id = $2`+s.forUpdate(), id, orgID).Scan(&body)
		if errors.Is(err, sql.ErrNoRows) {
			return notFoundInstruction(id)
		}
		if err != nil {
			return err
		}
		var cur spec.Instruction
		if err := json.Unmarshal([]byte(body), &cur); err != nil {
			return err
		}
		next, err := ApplyPatch(cur, p)
		if err != nil {
			return err
		}
		next.UpdatedAt = cur.UpdatedAt
		if nb, err := encodeInstruction(next); err != nil {
			return err
		} else if bytes.Equal(nb, []byte(body)) {
			out = cur
			return nil
		}
		now := s.Now()
		next.UpdatedAt = spec.NewTime(now)
		added, removed := diff(cur.UsedBy, next.UsedBy)
		if err := s.assign(ctx, tx, orgID, added, removed); err != nil {
			return err
		}
		nb, err := encodeInstruction(next)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE orgapi_instructions SET agent_type = $1, trigger_type = $2, action = $3,
			assessment_id = $4, search_text = $5, body = $6, updated_at = $7 WHERE id = $8`,
			next.AgentType, next.Trigger.Type, next.Action, next.AssessmentID, searchText(next), string(nb), sqldb.Millis(now), id)
		if sqldb.IsUniqueViolation(err) {
			return assessmentConflict(next.AssessmentID)
		}
		if err != nil {
			return err
		}
		if err := s.link(ctx, tx, id, added, removed); err != nil {
			return err
		}
		out = next
		return s.audit(ctx, tx, orgID, now, actor, AuditInstructionUpdated, "instruction", id, json.RawMessage(body), json.RawMessage(nb))
	})
	if err != nil {
		return spec.Instruction{}, err
	}
	return out, nil
}

// diff returns the ids in next and not in cur, and those in cur and not in
// next.
func diff(cur, next []string) (added, removed []string) {
	for _, id := range next {
		if !slices.Contains(cur, id) {
			added = append(added, id)
		}
	}
	for _, id := range cur {
		if !slices.Contains(next, id) {
			removed = append(removed, id)
		}
	}
	return added, removed
}

// DeleteInstruction deletes one instruction of the organisation and removes
// it from every agent it was assigned to; spec.ErrNotFound when it is gone.
func (s *Store) DeleteInstruction(ctx context.Context, orgID, id string, actor Actor) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var body string
		err := tx.QueryRowContext(ctx, `SELECT body FROM orgapi_instructions WHERE id = $1 AND org_id = $2`+s.forUpdate(), id, orgID).Scan(&body)
		if errors.Is(err, sql.ErrNoRows) {
			return notFoundInstruction(id)
		}
		if err != nil {
			return err
		}
		var cur spec.Instruction
		if err := json.Unmarshal([]byte(body), &cur); err != nil {
			return err
		}
		if err := s.assign(ctx, tx, orgID, nil, cur.UsedBy); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM orgapi_instruction_agents WHERE instruction_id = $1`, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM orgapi_instructions WHERE id = $1`, id); err != nil {
			return err
		}
		return s.audit(ctx, tx, orgID, s.Now(), actor, AuditInstructionDeleted, "instruction", id, json.RawMessage(body), nil)
	})
}

// ListInstructions returns one page of the organisation's instructions that
// match q, newest first (createdAt descending, then id), with the number of
// all that match. Both come from one snapshot.
func (s *Store) ListInstructions(ctx context.Context, orgID string, q InstructionQuery) (spec.InstructionList, error) {
	var items []spec.Instruction
	list, err := s.ScanInstructions(ctx, orgID, q, func(in spec.Instruction) error {
		items = append(items, in)
		return nil
	})
	if items != nil {
		list.Items = items
	}
	return list, err
}

// ScanInstructions is [Store.ListInstructions] calling each for the
// instructions of the page one at a time, as they are read, rather than
// collecting them: the list it returns has no items. An error of each ends
// the scan and is returned.
func (s *Store) ScanInstructions(ctx context.Context, orgID string, q InstructionQuery, each func(spec.Instruction) error) (spec.InstructionList, error) {
	if q.Page < 1 {
		q.Page = 1
	}
	if q.PageSize < 1 || q.PageSize > MaxPageSize {
		q.PageSize = DefaultPageSize
	}
	list := spec.InstructionList{Items: []spec.Instruction{}, Page: q.Page, PageSize: q.PageSize}
	where := []string{"i.org_id = $1"}
	args := []any{orgID}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "$?", fmt.Sprintf("$%d", len(args))))
	}
	if q.TriggerType != "" {
		add("i.trigger_type = $?", q.TriggerType)
	}
	if q.Action != "" {
		add("i.action = $?", q.Action)
	}
	if q.AgentType != "" {
		add("i.agent_type = $?", q.AgentType)
	}
	if q.AgentID != "" {
		add("i.id IN (SELECT a.instruction_id FROM orgapi_instruction_agents a WHERE a.agent_id = $?)", strings.ToLower(q.AgentID))
	}
	if term := fold(q.Search); term != "" {
		if s.db.Dialect == sqldb.Postgres {
			add("strpos(i.search_text, $?) > 0", term)
		} else {
			add("instr(i.search_text, $?) > 0", term)
		}
	}
	cond := strings.Join(where, " AND ")
	opts := &sql.TxOptions{ReadOnly: true}
	if s.db.Dialect == sqldb.Postgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return list, err
	}
	defer func() { _ = tx.Rollback() }()
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM orgapi_instructions i WHERE `+cond, args...).Scan(&list.TotalCount); err != nil {
		return list, err
	}
	offset := int64(q.Page-1) * int64(q.PageSize)
	if q.Page-1 > list.TotalCount/q.PageSize { // past the last page (and no overflow)
		return list, nil
	}
	n := len(args)
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT i.body FROM orgapi_instructions i WHERE %s
		ORDER BY i.created_at DESC, i.id LIMIT $%d OFFSET $%d`, cond, n+1, n+2), append(args, q.PageSize, offset)...)
	if err != nil {
		return list, err
	}
	defer rows.Close()
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return list, err
		}
		var in spec.Instruction
		if err := json.Unmarshal(b, &in); err != nil {
			return list, fmt.Errorf("org: stored instruction: %w", err)
		}
		if err := each(in); err != nil {
			return list, err
		}
	}
	return list, rows.Err()
}
