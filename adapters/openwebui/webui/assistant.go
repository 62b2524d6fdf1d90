package webui

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// userRow is a user with the names of their groups.
type userRow struct {
	id, email, department string
	groups                []string
	createdAt             int64
}

func (u userRow) ref() *spec.User {
	return &spec.User{ID: u.id, Email: u.email, Department: u.department, Groups: u.groups}
}

// users loads the users of ids (repeats allowed) and their groups. Open WebUI
// has no department column; a "department" key in user.info, which an
// administrator or a SCIM/OAuth sync may set, is served as the department.
func (s *Source) users(ctx context.Context, ids []string) (map[string]userRow, error) {
	out := map[string]userRow{}
	ids = unique(ids)
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.query(ctx, `SELECT u.id, u.email, CAST(u.info AS TEXT), u.created_at FROM "user" u WHERE u.id IN (`+placeholders(len(ids))+`)`, strArgs(ids)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var u userRow
		var email, info sql.NullString
		if err := rows.Scan(&u.id, &email, &info, &u.createdAt); err != nil {
			return nil, fmt.Errorf("webui: read user: %w", err)
		}
		u.email, u.department = email.String, department(info)
		out[u.id] = u
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("webui: read users: %w", err)
	}
	rows.Close()
	grows, err := s.query(ctx, `SELECT gm.user_id, g.name FROM group_member gm JOIN "group" g ON g.id = gm.group_id
		WHERE gm.user_id IN (`+placeholders(len(ids))+`) ORDER BY gm.user_id, g.name`, strArgs(ids)...)
	if err != nil {
		return nil, err
	}
	defer grows.Close()
	for grows.Next() {
		var uid, name string
		if err := grows.Scan(&uid, &name); err != nil {
			return nil, fmt.Errorf("webui: read group member: %w", err)
		}
		if u, ok := out[uid]; ok {
			u.groups = append(u.groups, name)
			out[uid] = u
		}
	}
	if err := grows.Err(); err != nil {
		return nil, fmt.Errorf("webui: read group members: %w", err)
	}
	return out, nil
}

// departments returns the department of every user that has one.
func (s *Source) departments(ctx context.Context) (map[string]string, error) {
	rows, err := s.query(ctx, `SELECT u.id, CAST(u.info AS TEXT) FROM "user" u`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id string
		var info sql.NullString
		if err := rows.Scan(&id, &info); err != nil {
			return nil, fmt.Errorf("webui: read user: %w", err)
		}
		if d := department(info); d != "" {
			out[id] = d
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("webui: read users: %w", err)
	}
	return out, nil
}

// department reads the department key of user.info.
func department(info sql.NullString) string {
	if !info.Valid {
		return ""
	}
	var i struct {
		Department string `json:"department"`
	}
	_ = json.Unmarshal([]byte(info.String), &i)
	return i.Department
}

func unique(ids []string) []string {
	seen := map[string]bool{}
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// modelRow is a row of the model table. A row with a base model is a custom
// model built in the workspace: an assistant. A row without one only
// overrides the settings of a model served by a connection.
type modelRow struct {
	id, userID, baseModelID, name string
	params                        map[string]json.RawMessage
	meta                          modelMeta
	active                        bool
	createdAt, updatedAt          int64
	toolNames                     map[string]string // tool id -> name
}

// modelMeta holds the keys of model.meta the web client writes.
type modelMeta struct {
	Description  string          `json:"description"`
	ToolIDs      []string        `json:"toolIds"`
	Capabilities map[string]bool `json:"capabilities"`
	Knowledge    []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"knowledge"`
}

func (m *modelRow) system() string {
	var s string
	if v, ok := m.params["system"]; ok {
		_ = json.Unmarshal(v, &s)
	}
	return s
}

func (m *modelRow) tools() []spec.Tool {
	var out []spec.Tool
	for _, id := range m.meta.ToolIDs {
		out = append(out, spec.Tool{ID: id, Name: m.toolNames[id], Type: "function"})
	}
	return out
}

const modelColumns = `m.id, m.user_id, m.base_model_id, m.name, CAST(m.params AS TEXT), CAST(m.meta AS TEXT), m.is_active, m.created_at, m.updated_at`

func scanModels(rows *sql.Rows) ([]modelRow, error) {
	defer rows.Close()
	var out []modelRow
	for rows.Next() {
		var m modelRow
		var userID, base, params, meta sql.NullString
		var active sql.NullBool
		if err := rows.Scan(&m.id, &userID, &base, &m.name, &params, &meta, &active, &m.createdAt, &m.updatedAt); err != nil {
			return nil, fmt.Errorf("webui: read model: %w", err)
		}
		m.userID, m.baseModelID, m.active = userID.String, base.String, !active.Valid || active.Bool
		if params.Valid {
			_ = json.Unmarshal([]byte(params.String), &m.params)
		}
		if meta.Valid {
			_ = json.Unmarshal([]byte(meta.String), &m.meta)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("webui: read models: %w", err)
	}
	return out, nil
}

// models loads every model row, by id, with the names of their tools.
func (s *Source) models(ctx context.Context) (map[string]modelRow, error) {
	rows, err := s.query(ctx, `SELECT `+modelColumns+` FROM model m`)
	if err != nil {
		return nil, err
	}
	list, err := scanModels(rows)
	if err != nil {
		return nil, err
	}
	tools, err := s.toolNames(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]modelRow, len(list))
	for _, m := range list {
		m.toolNames = tools
		out[m.id] = m
	}
	return out, nil
}

func (s *Source) toolNames(ctx context.Context) (map[string]string, error) {
	rows, err := s.query(ctx, `SELECT id, name FROM tool`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, fmt.Errorf("webui: read tool: %w", err)
		}
		out[id] = name
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("webui: read tools: %w", err)
	}
	return out, nil
}

// ListAssistants implements [provider.DataSource]: the custom models (rows
// with a base model) in (updated_at, id) order.
func (s *Source) ListAssistants(ctx context.Context, q provider.AssistantQuery) (provider.Page[spec.Assistant], error) {
	var page provider.Page[spec.Assistant]
	if !s.ownTenant(q.Tenant) {
		return page, nil
	}
	where, args := []string{"m.base_model_id IS NOT NULL"}, []any{}
	if !q.UpdatedSince.IsZero() {
		where = append(where, "m.updated_at >= ?")
		args = append(args, ceilSeconds(q.UpdatedSince.UnixMilli()))
	}
	where, args = s.keyset(where, args, "m.updated_at", "m.id", q.After)
	rows, err := s.query(ctx, fmt.Sprintf(`SELECT %s FROM model m WHERE %s ORDER BY m.updated_at, %s LIMIT %d`,
		modelColumns, strings.Join(where, " AND "), s.binary("m.id"), q.Limit+1), args...)
	if err != nil {
		return page, err
	}
	models, err := scanModels(rows)
	if err != nil {
		return page, err
	}
	if len(models) > q.Limit {
		models, page.HasMore = models[:q.Limit], true
	}
	page.Items, err = s.assistants(ctx, models)
	return page, err
}

// GetAssistant implements [provider.DataSource].
func (s *Source) GetAssistant(ctx context.Context, tenant, id string) (spec.Assistant, error) {
	if !s.ownTenant(tenant) {
		return spec.Assistant{}, provider.ErrNotFound
	}
	rows, err := s.query(ctx, `SELECT `+modelColumns+` FROM model m WHERE m.base_model_id IS NOT NULL AND m.id = ?`, id)
	if err != nil {
		return spec.Assistant{}, err
	}
	models, err := scanModels(rows)
	if err != nil {
		return spec.Assistant{}, err
	}
	if len(models) == 0 {
		return spec.Assistant{}, provider.ErrNotFound
	}
	out, err := s.assistants(ctx, models)
	if err != nil {
		return spec.Assistant{}, err
	}
	return out[0], nil
}

// assistants maps custom model rows, loading their owners, grants and tools.
func (s *Source) assistants(ctx context.Context, models []modelRow) ([]spec.Assistant, error) {
	if len(models) == 0 {
		return nil, nil
	}
	var owners, ids []string
	for _, m := range models {
		owners = append(owners, m.userID)
		ids = append(ids, m.id)
	}
	users, err := s.users(ctx, owners)
	if err != nil {
		return nil, err
	}
	tools, err := s.toolNames(ctx)
	if err != nil {
		return nil, err
	}
	visibility, err := s.visibility(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]spec.Assistant, 0, len(models))
	for _, m := range models {
		m.toolNames = tools
		a := spec.Assistant{
			ID:           m.id,
			Name:         m.name,
			Description:  m.meta.Description,
			Status:       "active",
			CreatedAt:    secondsTime(m.createdAt),
			UpdatedAt:    secondsTime(m.updatedAt),
			Visibility:   visibility[m.id],
			Model:        m.baseModelID,
			Parameters:   parameters(m.params),
			Instructions: m.system(),
		}
		if !m.active {
			a.Status = "inactive"
		}
		if a.Visibility == "" {
			a.Visibility = spec.VisibilityPrivate
		}
		if u, ok := users[m.userID]; ok {
			a.Owner = &spec.User{ID: u.id, Email: u.email, Department: u.department}
		} else if m.userID != "" {
			a.Owner = &spec.User{ID: m.userID}
		}
		for _, t := range m.tools() {
			a.Skills = append(a.Skills, spec.Skill{ID: t.ID, Name: t.Name, Type: spec.SkillFunction})
		}
		var caps []string
		for c, on := range m.meta.Capabilities {
			if on {
				caps = append(caps, c)
			}
		}
		sort.Strings(caps)
		for _, c := range caps {
			a.Skills = append(a.Skills, spec.Skill{ID: c, Name: c, Type: spec.SkillBuiltin})
		}
		for _, k := range m.meta.Knowledge {
			a.Knowledge = append(a.Knowledge, spec.KnowledgeItem{ID: k.ID, Name: k.Name, Type: k.Type})
		}
		out = append(out, a)
	}
	return out, nil
}

// visibility derives each model's visibility from its access grants: a read
// grant to everyone ("*") is organisation-wide, grants to groups or users
// are team, no grant is private.
func (s *Source) visibility(ctx context.Context, ids []string) (map[string]string, error) {
	rows, err := s.query(ctx, `SELECT resource_id, principal_type, principal_id FROM access_grant
		WHERE resource_type = 'model' AND resource_id IN (`+placeholders(len(ids))+`)`, strArgs(ids)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, ptype, pid string
		if err := rows.Scan(&id, &ptype, &pid); err != nil {
			return nil, fmt.Errorf("webui: read access grant: %w", err)
		}
		if pid == "*" {
			out[id] = spec.VisibilityOrganisation
		} else if out[id] == "" {
			out[id] = spec.VisibilityTeam
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("webui: read access grants: %w", err)
	}
	return out, nil
}
