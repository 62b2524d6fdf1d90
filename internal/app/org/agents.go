package org

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// CreateAgent creates an agent of the organisation.
func (s *Store) CreateAgent(ctx context.Context, orgID, name string, actor Actor) (spec.Agent, error) {
	if err := checkName("agent", name); err != nil {
		return spec.Agent{}, err
	}
	org, err := s.Organisation(ctx, orgID)
	if err != nil {
		return spec.Agent{}, err
	}
	now := s.Now()
	a := spec.Agent{ID: uuid.NewString(), Name: name, Type: spec.AgentTypeDataProtection}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO orgapi_agents (id, org_id, name, type, created_at)
			VALUES ($1, $2, $3, $4, $5)`, a.ID, org.ID, a.Name, a.Type, sqldb.Millis(now)); err != nil {
			return err
		}
		return s.audit(ctx, tx, org.ID, now, actor, AuditAgentCreated, "agent", a.ID, nil, a)
	})
	return a, err
}

// Agents returns the organisation's agents, oldest first.
func (s *Store) Agents(ctx context.Context, orgID string) ([]spec.Agent, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, type, instruction_count FROM orgapi_agents
		WHERE org_id = $1 ORDER BY created_at, id`, strings.ToLower(orgID))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []spec.Agent{}
	for rows.Next() {
		var a spec.Agent
		if err := rows.Scan(&a.ID, &a.Name, &a.Type, &a.InstructionCount); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Agent returns one agent of the organisation, or an error of kind
// spec.ErrNotFound.
func (s *Store) Agent(ctx context.Context, orgID, agentID string) (spec.Agent, error) {
	var a spec.Agent
	err := s.db.QueryRowContext(ctx, `SELECT id, name, type, instruction_count FROM orgapi_agents
		WHERE id = $1 AND org_id = $2`, strings.ToLower(agentID), strings.ToLower(orgID)).
		Scan(&a.ID, &a.Name, &a.Type, &a.InstructionCount)
	if errors.Is(err, sql.ErrNoRows) {
		return a, &spec.Error{Kind: spec.ErrNotFound, Detail: fmt.Sprintf("No agent %s in this organisation.", agentID)}
	}
	return a, err
}

// AgentInstructions returns the instructions assigned to one agent of the
// organisation, oldest first: what the agent enforces.
func (s *Store) AgentInstructions(ctx context.Context, orgID, agentID string) ([]spec.Instruction, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT i.body FROM orgapi_instructions i
		JOIN orgapi_instruction_agents a ON a.instruction_id = i.id
		WHERE a.agent_id = $1 AND i.org_id = $2 ORDER BY i.created_at, i.id`, strings.ToLower(agentID), strings.ToLower(orgID))
	if err != nil {
		return nil, err
	}
	return sqldb.ScanJSON[spec.Instruction](rows)
}
