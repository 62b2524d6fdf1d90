package orgapi

import (
	"bytes"
	"context"
	"crypto/subtle"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"golang.org/x/text/cases"

	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

//go:embed migrations
var migrationFS embed.FS

// Component is the name under which the store's migrations are recorded.
const Component = "orgapi"

// Migrations returns the store's embedded migrations (one directory per
// dialect), for readiness checks with [sqldb.DB.MigrationsApplied].
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err) // the directory is embedded
	}
	return sub
}

// MaxNameLength bounds the names of organisations, agents and keys, in
// characters.
const MaxNameLength = 200

// Store keeps organisations, agents, API keys, instructions and the audit
// trail in a SQLite or PostgreSQL database. It is safe for concurrent use, also
// by several processes sharing one database.
type Store struct {
	db  *sqldb.DB
	now func() time.Time
}

// StoreOption configures a Store.
type StoreOption func(*Store)

// WithNow sets the clock that stamps changes and decides key expiry. Default:
// time.Now.
func WithNow(now func() time.Time) StoreOption { return func(s *Store) { s.now = now } }

// NewStore applies the store's migrations to db and returns the store.
func NewStore(ctx context.Context, db *sqldb.DB, opts ...StoreOption) (*Store, error) {
	if db == nil {
		return nil, errors.New("orgapi: NewStore: nil database")
	}
	s := &Store{db: db, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	if s.now == nil {
		return nil, errors.New("orgapi: WithNow: nil clock")
	}
	if err := db.Migrate(ctx, Component, Migrations()); err != nil {
		return nil, err
	}
	return s, nil
}

// inTx runs fn in a transaction, again when it failed only because of
// concurrent ones (sqldb.DB.InTxRetry); still failing so after the last
// attempt is spec.ErrUnavailable.
func (s *Store) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	err := s.db.InTxRetry(ctx, fn)
	if sqldb.IsRetryable(err) {
		return &httpx.Error{Kind: spec.ErrUnavailable, Detail: "The service is busy with concurrent changes; retry the request."}
	}
	return err
}

// DB returns the store's database.
func (s *Store) DB() *sqldb.DB { return s.db }

// Now returns the store's clock reading, in UTC at millisecond precision.
func (s *Store) Now() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func checkName(what, name string) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("%s name: %w: must not be empty", what, spec.ErrInvalid)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%s name: %w: must be UTF-8", what, spec.ErrInvalid)
	}
	if n := utf8.RuneCountInString(name); n > MaxNameLength {
		return fmt.Errorf("%s name: %w: %d characters, at most %d", what, spec.ErrInvalid, n, MaxNameLength)
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return fmt.Errorf("%s name: %w: must not hold control characters", what, spec.ErrInvalid)
	}
	return nil
}

// audit appends one record to the audit trail within tx. Call it last in
// the transaction: it locks the organisation's row until the commit.
func (s *Store) audit(ctx context.Context, tx *sql.Tx, org string, at time.Time, actor Actor, action, resType, resID string, before, after any) error {
	enc := func(v any) (any, error) {
		if v == nil {
			return nil, nil
		}
		if raw, ok := v.(json.RawMessage); ok {
			return string(raw), nil
		}
		b, err := json.Marshal(v)
		return string(b), err
	}
	b, err := enc(before)
	if err != nil {
		return err
	}
	a, err := enc(after)
	if err != nil {
		return err
	}
	// The organisation's row hands out the sequence number, and its lock,
	// held to the commit, makes the numbers follow the order of the commits:
	// a reader that has seen number n never later sees a new record below n.
	var seq int64
	if err := tx.QueryRowContext(ctx, `UPDATE orgapi_organisations SET audit_seq = audit_seq + 1
		WHERE id = $1 RETURNING audit_seq`, org).Scan(&seq); err != nil {
		return fmt.Errorf("audit sequence of organisation %s: %w", org, err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO orgapi_audit
		(org_id, seq, at, actor_type, actor_id, actor_name, action, resource_type, resource_id, before_json, after_json)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		org, seq, sqldb.Millis(at), actor.Type, actor.ID, actor.Name, action, resType, resID, b, a)
	return err
}

// --- organisations

// CreateOrganisation creates an organisation.
func (s *Store) CreateOrganisation(ctx context.Context, n NewOrganisation, actor Actor) (Organisation, error) {
	if err := checkName("organisation", n.Name); err != nil {
		return Organisation{}, err
	}
	if n.Plan == "" {
		n.Plan = PlanStandard
	}
	if _, err := ParsePlan(string(n.Plan)); err != nil {
		return Organisation{}, fmt.Errorf("%w: %v", spec.ErrInvalid, err)
	}
	switch {
	case n.Plan == PlanEnterprise && n.HourlyLimit < 1:
		return Organisation{}, fmt.Errorf("%w: the enterprise plan needs an hourly limit of at least 1", spec.ErrInvalid)
	case n.Plan != PlanEnterprise && n.HourlyLimit != 0:
		return Organisation{}, fmt.Errorf("%w: an hourly limit is configured only for the enterprise plan; the %s plan's is fixed", spec.ErrInvalid, n.Plan)
	}
	now := s.Now()
	o := Organisation{ID: uuid.NewString(), Name: n.Name, Plan: n.Plan, HourlyLimit: n.HourlyLimit, CreatedAt: spec.NewTime(now)}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO orgapi_organisations (id, name, plan, hourly_limit, created_at)
			VALUES ($1, $2, $3, $4, $5)`, o.ID, o.Name, string(o.Plan), o.HourlyLimit, sqldb.Millis(now)); err != nil {
			return err
		}
		return s.audit(ctx, tx, o.ID, now, actor, AuditOrganisationCreated, "organisation", o.ID, nil, o)
	})
	return o, err
}

const orgColumns = `id, name, plan, hourly_limit, created_at`

func scanOrg(row interface{ Scan(...any) error }) (Organisation, error) {
	var o Organisation
	var plan string
	var created int64
	if err := row.Scan(&o.ID, &o.Name, &plan, &o.HourlyLimit, &created); err != nil {
		return o, err
	}
	o.Plan, o.CreatedAt = Plan(plan), spec.NewTime(fromMillis(created))
	return o, nil
}

// Organisation returns the organisation id, or an error of kind spec.ErrNotFound.
func (s *Store) Organisation(ctx context.Context, id string) (Organisation, error) {
	o, err := scanOrg(s.db.QueryRowContext(ctx, `SELECT `+orgColumns+` FROM orgapi_organisations WHERE id = $1`, strings.ToLower(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return o, fmt.Errorf("organisation %s: %w", id, spec.ErrNotFound)
	}
	return o, err
}

// Organisations returns every organisation, oldest first.
func (s *Store) Organisations(ctx context.Context) ([]Organisation, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+orgColumns+` FROM orgapi_organisations ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Organisation{}
	for rows.Next() {
		o, err := scanOrg(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// --- agents

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

// --- API keys

// CreateKey creates an API key and returns it with its secret, which is not
// kept: only its SHA-256 digest and last four characters are.
func (s *Store) CreateKey(ctx context.Context, n NewKey, actor Actor) (CreatedKey, error) {
	if err := checkName("key", n.Name); err != nil {
		return CreatedKey{}, err
	}
	if n.Type == "" {
		n.Type = KeyTypeIngestion
	}
	if _, err := ParseKeyType(string(n.Type)); err != nil {
		return CreatedKey{}, fmt.Errorf("%w: %v", spec.ErrInvalid, err)
	}
	org, err := s.Organisation(ctx, n.OrganisationID)
	if err != nil {
		return CreatedKey{}, err
	}
	now := s.Now()
	var expires any
	k := CreatedKey{Secret: newSecret()}
	k.APIKey = APIKey{ID: uuid.NewString(), OrganisationID: org.ID, Name: n.Name, Type: n.Type,
		Last4: last4(k.Secret), CreatedAt: spec.NewTime(now)}
	switch {
	case n.NoExpiry && n.ExpiresAt != nil:
		return CreatedKey{}, fmt.Errorf("%w: a key has an expiry or none, not both", spec.ErrInvalid)
	case !n.NoExpiry && n.ExpiresAt == nil:
		t := DefaultExpiry(now)
		n.ExpiresAt = &t
	}
	if n.ExpiresAt != nil {
		if !n.ExpiresAt.After(now) {
			return CreatedKey{}, fmt.Errorf("%w: the expiry %s is not in the future", spec.ErrInvalid, n.ExpiresAt.UTC().Format(time.RFC3339))
		}
		k.ExpiresAt = spec.TimePtr(*n.ExpiresAt)
		expires = sqldb.Millis(k.ExpiresAt.Time)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO orgapi_api_keys
			(id, org_id, name, type, secret_hash, last4, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			k.ID, org.ID, k.Name, string(k.Type), hashSecret(k.Secret), k.Last4, sqldb.Millis(now), expires); err != nil {
			return err
		}
		return s.audit(ctx, tx, org.ID, now, actor, AuditKeyCreated, "key", k.ID, nil, k.APIKey)
	})
	return k, err
}

const keyColumns = `id, org_id, name, type, last4, created_at, expires_at, revoked_at`

func scanKey(row interface{ Scan(...any) error }) (APIKey, error) {
	var k APIKey
	var typ string
	var created int64
	var expires, revoked sql.NullInt64
	if err := row.Scan(&k.ID, &k.OrganisationID, &k.Name, &typ, &k.Last4, &created, &expires, &revoked); err != nil {
		return k, err
	}
	k.Type, k.CreatedAt = KeyType(typ), spec.NewTime(fromMillis(created))
	if expires.Valid {
		k.ExpiresAt = spec.TimePtr(fromMillis(expires.Int64))
	}
	if revoked.Valid {
		k.RevokedAt = spec.TimePtr(fromMillis(revoked.Int64))
	}
	return k, nil
}

// Keys returns the organisation's keys, oldest first, revoked and expired
// ones included.
func (s *Store) Keys(ctx context.Context, orgID string) ([]APIKey, error) {
	if _, err := s.Organisation(ctx, orgID); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+keyColumns+` FROM orgapi_api_keys WHERE org_id = $1 ORDER BY created_at, id`, strings.ToLower(orgID))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []APIKey{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeKey revokes the organisation's key keyID at once; the next request
// with it is refused. Revoking a revoked key changes nothing and returns it
// as it is.
func (s *Store) RevokeKey(ctx context.Context, orgID, keyID string, actor Actor) (APIKey, error) {
	orgID, keyID = strings.ToLower(orgID), strings.ToLower(keyID)
	var k APIKey
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		k, err = scanKey(tx.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM orgapi_api_keys WHERE id = $1 AND org_id = $2`+s.forUpdate(), keyID, orgID))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("key %s of organisation %s: %w", keyID, orgID, spec.ErrNotFound)
		}
		if err != nil || k.RevokedAt != nil {
			return err
		}
		before := k
		now := s.Now()
		k.RevokedAt = spec.TimePtr(now)
		if _, err := tx.ExecContext(ctx, `UPDATE orgapi_api_keys SET revoked_at = $1 WHERE id = $2`, sqldb.Millis(now), k.ID); err != nil {
			return err
		}
		return s.audit(ctx, tx, orgID, now, actor, AuditKeyRevoked, "key", k.ID, before, k)
	})
	return k, err
}

// maxSecretLength bounds what Authenticate hashes; real secrets are 50
// characters.
const maxSecretLength = 256

// Authenticate returns the principal of an API key secret. A secret that is
// unknown, revoked or expired is an error of kind spec.ErrUnauthorized, the same
// for all three; a valid key that is not of type API is spec.ErrForbidden. It reads
// the database every time: revocation has effect on the next request.
func (s *Store) Authenticate(ctx context.Context, secret string) (Principal, error) {
	if secret == "" || len(secret) > maxSecretLength {
		return Principal{}, spec.ErrUnauthorized
	}
	digest := hashSecret(secret)
	var p Principal
	var typ string
	var stored []byte
	var expires, revoked sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT id, org_id, name, type, secret_hash, expires_at, revoked_at
		FROM orgapi_api_keys WHERE secret_hash = $1`, digest).
		Scan(&p.KeyID, &p.OrganisationID, &p.KeyName, &typ, &stored, &expires, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, spec.ErrUnauthorized
	}
	if err != nil {
		return Principal{}, err
	}
	now := s.Now()
	if subtle.ConstantTimeCompare(stored, digest) != 1 || revoked.Valid ||
		(expires.Valid && now.UnixMilli() >= expires.Int64) {
		return Principal{}, spec.ErrUnauthorized
	}
	p.Type = KeyType(typ)
	if p.Type != KeyTypeAPI {
		return p, &httpx.Error{Kind: spec.ErrForbidden, Detail: "Ingestion keys cannot use this API; use a key of type API."}
	}
	return p, nil
}

// --- audit trail

// Audit returns up to limit records of the organisation's audit trail with a
// Seq above after, oldest first.
func (s *Store) Audit(ctx context.Context, orgID string, after int64, limit int) ([]AuditRecord, error) {
	if limit < 1 {
		limit = 1000
	}
	rows, err := s.db.QueryContext(ctx, `SELECT seq, org_id, at, actor_type, actor_id, actor_name, action,
		resource_type, resource_id, before_json, after_json
		FROM orgapi_audit WHERE org_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, strings.ToLower(orgID), after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []AuditRecord{}
	for rows.Next() {
		var r AuditRecord
		var at int64
		var before, aft sql.NullString
		if err := rows.Scan(&r.Seq, &r.OrganisationID, &at, &r.Actor.Type, &r.Actor.ID, &r.Actor.Name, &r.Action,
			&r.ResourceType, &r.ResourceID, &before, &aft); err != nil {
			return nil, err
		}
		r.At = spec.NewTime(fromMillis(at))
		r.Before, r.After = rawOrNull(before), rawOrNull(aft)
		out = append(out, r)
	}
	return out, rows.Err()
}

func rawOrNull(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return json.RawMessage("null")
	}
	return json.RawMessage(s.String)
}

// forUpdate locks the rows a read-modify-write transaction selects on
// PostgreSQL; SQLite's write transactions already hold the database lock.
func (s *Store) forUpdate() string {
	if s.db.Dialect == sqldb.Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// --- instructions

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

// CreateInstruction creates an instruction of the organisation from a body
// checked by [ParseInstructionCreate]. Agents of usedBy that are not the
// organisation's are spec.ErrInvalid naming usedBy; an agent that already holds
// MaxInstructionsPerAgent instructions is spec.ErrConflict naming the agent; a
// repeated assessmentId is spec.ErrConflict. Nothing is written on error.
func (s *Store) CreateInstruction(ctx context.Context, orgID string, c spec.InstructionCreate, actor Actor) (spec.Instruction, error) {
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
	return &httpx.Error{Kind: spec.ErrConflict, Detail: fmt.Sprintf("Assessment %s already produced an instruction.", a),
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
			return httpx.InvalidBody("usedBy", "agent %s is not one of the organisation's agents; GET /organisations/%s/agents lists them", id, orgID)
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
		return fmt.Errorf("orgapi: agent counts out of step: %d of %d agents changed", len(changed), len(added)+len(removed))
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
	return &httpx.Error{
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
	return &httpx.Error{Kind: spec.ErrNotFound, Detail: fmt.Sprintf("No instruction %s in this organisation.", id)}
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

// UpdateInstruction applies a patch checked by [ParseInstructionPatch] to
// one instruction of the organisation, with the rules of CreateInstruction.
// A patch that changes nothing writes nothing and leaves updatedAt alone.
func (s *Store) UpdateInstruction(ctx context.Context, orgID, id string, p spec.InstructionPatch, actor Actor) (spec.Instruction, error) {
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
	list.Items, err = sqldb.ScanJSON[spec.Instruction](rows)
	return list, err
}

// Agent returns one agent of the organisation, or an error of kind
// spec.ErrNotFound.
func (s *Store) Agent(ctx context.Context, orgID, agentID string) (spec.Agent, error) {
	var a spec.Agent
	err := s.db.QueryRowContext(ctx, `SELECT id, name, type, instruction_count FROM orgapi_agents
		WHERE id = $1 AND org_id = $2`, strings.ToLower(agentID), strings.ToLower(orgID)).
		Scan(&a.ID, &a.Name, &a.Type, &a.InstructionCount)
	if errors.Is(err, sql.ErrNoRows) {
		return a, &httpx.Error{Kind: spec.ErrNotFound, Detail: fmt.Sprintf("No agent %s in this organisation.", agentID)}
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
