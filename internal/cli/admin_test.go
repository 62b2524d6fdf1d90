package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// admin runs "aiusage admin args..." on the database at dbURL with the
// environment environ.
func admin(t *testing.T, dbURL string, environ map[string]string, args ...string) result {
	t.Helper()
	return runCLI(t, "", environ, append(append([]string{"admin"}, args...), "--database-url", dbURL)...)
}

// adminOK runs an admin command that must succeed and print one JSON object
// on one line, and decodes it into v (when not nil).
func adminOK(t *testing.T, dbURL string, v any, args ...string) result {
	t.Helper()
	r := admin(t, dbURL, nil, args...)
	require.Equal(t, ExitOK, r.code, "%v: %s", args, r.stderr)
	require.True(t, strings.HasSuffix(r.stdout, "}\n"), "%v: %q", args, r.stdout)
	require.Equal(t, 1, strings.Count(r.stdout, "\n"), "%v: one compact line expected: %q", args, r.stdout)
	if v != nil {
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(v), r.stdout)
	}
	return r
}

// adminKey is a key as "admin key list" and "admin key revoke" print it.
type adminKey struct {
	org.APIKey
	Status string `json:"status"`
}

// adminAgent is an agent as "admin agent create" prints it.
type adminAgent struct {
	spec.Agent
	OrganisationID string `json:"organisationId"`
}

// fixture creates an organisation, an agent and an API key of type API with
// the admin commands.
type fixture struct {
	org   org.Organisation
	agent adminAgent
	key   org.CreatedKey
}

func newFixture(t *testing.T, dbURL string) fixture {
	t.Helper()
	var f fixture
	adminOK(t, dbURL, &f.org, "org", "create", "--name", "Acme")
	adminOK(t, dbURL, &f.agent, "agent", "create", "--org", f.org.ID, "--name", "Guard")
	adminOK(t, dbURL, &f.key, "key", "create", "--org", f.org.ID, "--name", "ci", "--type", "API")
	return f
}

// readAudit runs "admin audit" and decodes its NDJSON.
func readAudit(t *testing.T, dbURL string, args ...string) []org.AuditRecord {
	t.Helper()
	r := admin(t, dbURL, nil, append([]string{"audit"}, args...)...)
	require.Equal(t, ExitOK, r.code, r.stderr)
	out := []org.AuditRecord{}
	for line := range strings.Lines(r.stdout) {
		var rec org.AuditRecord
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		out = append(out, rec)
	}
	return out
}

func TestAdminOrg(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			var std, biz, ent org.Organisation
			before := time.Now().Add(-time.Second)
			adminOK(t, dbURL, &std, "org", "create", "--name", "Acme")
			require.Equal(t, "Acme", std.Name)
			require.Equal(t, org.PlanStandard, std.Plan)
			require.Zero(t, std.HourlyLimit)
			require.WithinRange(t, std.CreatedAt.Time, before, time.Now().Add(time.Second))
			require.Equal(t, strings.ToLower(std.ID), std.ID)

			adminOK(t, dbURL, &biz, "org", "create", "--name", "Big", "--plan", "business")
			require.Equal(t, org.PlanBusiness, biz.Plan)
			r := adminOK(t, dbURL, &ent, "org", "create", "--name", "Huge", "--plan", "enterprise", "--hourly-limit", "50000")
			require.Equal(t, org.PlanEnterprise, ent.Plan)
			require.Equal(t, 50000, ent.HourlyLimit)
			require.Contains(t, r.stdout, `"hourlyLimit":50000`)
			require.Empty(t, r.stderr)

			var list struct {
				Organisations []org.Organisation `json:"organisations"`
			}
			adminOK(t, dbURL, &list, "org", "list")
			require.Equal(t, []org.Organisation{std, biz, ent}, list.Organisations)
		})
	}
}

func TestAdminOrgListEmpty(t *testing.T) {
	t.Parallel()
	r := adminOK(t, sqldbtest.URL(t, sqldb.SQLite), nil, "org", "list")
	require.Equal(t, `{"organisations":[]}`+"\n", r.stdout)
}

func TestAdminAgent(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			var o org.Organisation
			adminOK(t, dbURL, &o, "org", "create", "--name", "Acme")

			// --org in any case; the output names the organisation in lowercase.
			var a, b adminAgent
			adminOK(t, dbURL, &a, "agent", "create", "--org", strings.ToUpper(o.ID), "--name", "Guard")
			require.Equal(t, adminAgent{Agent: spec.Agent{ID: a.ID, Name: "Guard", Type: spec.AgentTypeDataProtection}, OrganisationID: o.ID}, a)
			adminOK(t, dbURL, &b, "agent", "create", "--org", o.ID, "--name", "Second")

			var list struct {
				OrganisationID string       `json:"organisationId"`
				Agents         []spec.Agent `json:"agents"`
			}
			adminOK(t, dbURL, &list, "agent", "list", "--org", strings.ToUpper(o.ID))
			require.Equal(t, o.ID, list.OrganisationID)
			require.Equal(t, []spec.Agent{a.Agent, b.Agent}, list.Agents)

			// An organisation without agents lists none, as [].
			var other org.Organisation
			adminOK(t, dbURL, &other, "org", "create", "--name", "Other")
			r := adminOK(t, dbURL, nil, "agent", "list", "--org", other.ID)
			require.Equal(t, fmt.Sprintf(`{"organisationId":%q,"agents":[]}`+"\n", other.ID), r.stdout)
		})
	}
}

func TestAdminKey(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			var o org.Organisation
			adminOK(t, dbURL, &o, "org", "create", "--name", "Acme")

			// Defaults: type Ingestion, expiry one year ahead.
			var ing org.CreatedKey
			r := adminOK(t, dbURL, &ing, "key", "create", "--org", o.ID, "--name", "telemetry")
			require.Equal(t, org.KeyTypeIngestion, ing.Type)
			require.Equal(t, o.ID, ing.OrganisationID)
			require.Equal(t, "telemetry", ing.Name)
			require.True(t, strings.HasPrefix(ing.Secret, org.SecretPrefix), ing.Secret)
			require.Len(t, ing.Secret, 50)
			require.Equal(t, ing.Secret[len(ing.Secret)-4:], ing.Last4)
			require.NotNil(t, ing.ExpiresAt)
			require.Equal(t, org.DefaultExpiry(ing.CreatedAt.Time), ing.ExpiresAt.Time)
			require.Nil(t, ing.RevokedAt)
			require.Contains(t, r.stderr, "secret is shown only this once")
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)

			// --type API, --expires with an offset (stored in UTC).
			var api org.CreatedKey
			adminOK(t, dbURL, &api, "key", "create", "--org", o.ID, "--name", "ci", "--type", "API",
				"--expires", "2099-01-31T09:00:00.5+09:00")
			require.Equal(t, org.KeyTypeAPI, api.Type)
			require.Equal(t, "2099-01-31T00:00:00.500Z", api.ExpiresAt.String())

			// --no-expiry: null.
			var forever org.CreatedKey
			r = adminOK(t, dbURL, &forever, "key", "create", "--org", o.ID, "--name", "forever", "--no-expiry")
			require.Nil(t, forever.ExpiresAt)
			require.Contains(t, r.stdout, `"expiresAt":null`)

			// The list: every key with its status, never a secret.
			list := listKeys(t, dbURL, o.ID)
			require.Len(t, list, 3)
			for i, want := range []org.CreatedKey{ing, api, forever} {
				require.Equal(t, adminKey{APIKey: want.APIKey, Status: "active"}, list[i])
			}
			r = adminOK(t, dbURL, nil, "key", "list", "--org", o.ID)
			for _, k := range []org.CreatedKey{ing, api, forever} {
				require.NotContains(t, r.stdout, k.Secret)
				require.Contains(t, r.stdout, `"last4":"`+k.Last4+`"`)
			}
			require.NotContains(t, r.stdout, `"secret"`)

			// Revoke, with the ids in upper case: the key with status revoked.
			var revoked adminKey
			r = adminOK(t, dbURL, &revoked, "key", "revoke", "--org", strings.ToUpper(o.ID), "--key", strings.ToUpper(api.ID))
			require.Equal(t, "revoked", revoked.Status)
			require.Equal(t, api.ID, revoked.ID)
			require.NotNil(t, revoked.RevokedAt)
			require.NotContains(t, r.stdout, api.Secret)
			require.Equal(t, "revoked", listKeys(t, dbURL, o.ID)[1].Status)
			// Revoking again changes nothing.
			var again adminKey
			adminOK(t, dbURL, &again, "key", "revoke", "--org", o.ID, "--key", api.ID)
			require.Equal(t, revoked, again)
			require.Len(t, filterAudit(readAudit(t, dbURL, "--org", o.ID), org.AuditKeyRevoked), 1)
		})
	}
}

func listKeys(t *testing.T, dbURL, org string) []adminKey {
	t.Helper()
	var list struct {
		OrganisationID string     `json:"organisationId"`
		Keys           []adminKey `json:"keys"`
	}
	adminOK(t, dbURL, &list, "key", "list", "--org", org)
	require.Equal(t, org, list.OrganisationID)
	return list.Keys
}

func filterAudit(recs []org.AuditRecord, action string) []org.AuditRecord {
	var out []org.AuditRecord
	for _, r := range recs {
		if r.Action == action {
			out = append(out, r)
		}
	}
	return out
}

func TestAdminKeyListExpired(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	var o org.Organisation
	adminOK(t, dbURL, &o, "org", "create", "--name", "Acme")
	// A key created in 2020 that expired in 2021, with a store on a clock of
	// 2020: the CLI refuses a past --expires.
	ctx := context.Background()
	db, err := sqldb.Open(ctx, dbURL)
	require.NoError(t, err)
	defer db.Close()
	then := time.Date(2020, 6, 1, 0, 0, 0, 0, time.UTC)
	store, err := org.NewStore(ctx, db, org.WithNow(func() time.Time { return then }))
	require.NoError(t, err)
	exp := then.AddDate(1, 0, 0)
	_, err = store.CreateKey(ctx, org.KeyCreate{OrganisationID: o.ID, Name: "old", Type: org.KeyTypeAPI, ExpiresAt: &exp}, org.Actor{Type: org.ActorAdmin, Name: "t"})
	require.NoError(t, err)
	keys := listKeys(t, dbURL, o.ID)
	require.Len(t, keys, 1)
	require.Equal(t, "expired", keys[0].Status)
}

func TestAdminActor(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	var o org.Organisation
	// Default without USER: "admin".
	adminOK(t, dbURL, &o, "org", "create", "--name", "Acme")
	// USER, then AIUSAGE_ACTOR, then --actor (which wins over both).
	r := admin(t, dbURL, map[string]string{"USER": "alice"}, "agent", "create", "--org", o.ID, "--name", "a1")
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = admin(t, dbURL, map[string]string{"USER": "alice", "AIUSAGE_ACTOR": "bob"}, "agent", "create", "--org", o.ID, "--name", "a2")
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = admin(t, dbURL, map[string]string{"USER": "alice", "AIUSAGE_ACTOR": "bob"}, "key", "create", "--org", o.ID, "--name", "k", "--actor", "carol")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var k org.CreatedKey
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &k))
	r = admin(t, dbURL, nil, "key", "revoke", "--org", o.ID, "--key", k.ID, "--actor", "dave")
	require.Equal(t, ExitOK, r.code, r.stderr)
	// Read-only commands accept --actor too.
	adminOK(t, dbURL, nil, "org", "list", "--actor", "eve")

	recs := readAudit(t, dbURL, "--org", o.ID)
	var got []string
	for _, rec := range recs {
		require.Equal(t, org.ActorAdmin, rec.Actor.Type)
		require.Empty(t, rec.Actor.ID)
		got = append(got, rec.Action+" by "+rec.Actor.Name)
	}
	require.Equal(t, []string{
		"organisation.created by admin",
		"agent.created by alice",
		"agent.created by bob",
		"key.created by carol",
		"key.revoked by dave",
	}, got)
}

func TestAdminAudit(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			f := newFixture(t, dbURL)
			var other org.Organisation
			adminOK(t, dbURL, &other, "org", "create", "--name", "Other")

			recs := readAudit(t, dbURL, "--org", strings.ToUpper(f.org.ID))
			require.Len(t, recs, 3)
			for i, action := range []string{org.AuditOrganisationCreated, org.AuditAgentCreated, org.AuditKeyCreated} {
				require.Equal(t, action, recs[i].Action)
				require.Equal(t, f.org.ID, recs[i].OrganisationID)
				require.JSONEq(t, "null", string(recs[i].Before))
			}
			require.Equal(t, f.agent.ID, recs[1].ResourceID)
			require.Equal(t, f.key.ID, recs[2].ResourceID)
			require.NotContains(t, string(recs[2].After), f.key.Secret)

			// --after: only the later records.
			after := readAudit(t, dbURL, "--org", f.org.ID, "--after", fmt.Sprint(recs[0].Seq))
			require.Equal(t, recs[1:], after)
			require.Empty(t, readAudit(t, dbURL, "--org", f.org.ID, "--after", fmt.Sprint(recs[2].Seq)))

			// The other organisation's trail holds only its own creation.
			require.Len(t, readAudit(t, dbURL, "--org", other.ID), 1)
		})
	}
}

// TestAdminAuditPages checks that "admin audit" reads past one batch of
// auditBatch records, in order, without repeating one.
func TestAdminAuditPages(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			ctx := context.Background()
			db, err := sqldb.Open(ctx, dbURL)
			require.NoError(t, err)
			defer db.Close()
			store, err := org.NewStore(ctx, db)
			require.NoError(t, err)
			actor := org.Actor{Type: org.ActorAdmin, Name: "t"}
			org, err := store.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Acme"}, actor)
			require.NoError(t, err)
			n := auditBatch + auditBatch/2 // with the organisation's creation, 1.5 batches + 1
			for i := range n {
				_, err := store.CreateAgent(ctx, org.ID, fmt.Sprintf("agent %d", i), actor)
				require.NoError(t, err)
			}
			recs := readAudit(t, dbURL, "--org", org.ID)
			require.Len(t, recs, n+1)
			for i := 1; i < len(recs); i++ {
				require.Greater(t, recs[i].Seq, recs[i-1].Seq)
			}
			require.Len(t, readAudit(t, dbURL, "--org", org.ID, "--after", fmt.Sprint(recs[auditBatch-1].Seq)), n+1-auditBatch)
		})
	}
}

func TestAdminNotFound(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			f := newFixture(t, dbURL)
			var other org.Organisation
			adminOK(t, dbURL, &other, "org", "create", "--name", "Other")
			const missing = "00000000-0000-4000-8000-000000000000"
			cases := []struct {
				args []string
				want string
			}{
				{[]string{"agent", "create", "--org", missing, "--name", "x"}, "organisation " + missing + ": not found"},
				{[]string{"agent", "list", "--org", missing}, "not found"},
				{[]string{"key", "create", "--org", missing, "--name", "x"}, "not found"},
				{[]string{"key", "list", "--org", missing}, "not found"},
				{[]string{"key", "revoke", "--org", missing, "--key", f.key.ID}, "not found"},
				{[]string{"key", "revoke", "--org", f.org.ID, "--key", missing}, "key " + missing + " of organisation " + f.org.ID + ": not found"},
				// A key of another organisation is not found either.
				{[]string{"key", "revoke", "--org", other.ID, "--key", f.key.ID}, "not found"},
				{[]string{"audit", "--org", missing}, "not found"},
			}
			for _, tc := range cases {
				r := admin(t, dbURL, nil, tc.args...)
				require.Equal(t, ExitFailure, r.code, "%v: %s", tc.args, r.stderr)
				require.Contains(t, r.stderr, tc.want, tc.args)
				require.Contains(t, r.stderr, "aiusage: admin "+tc.args[0], tc.args)
				require.Contains(t, r.stderr, "' lists ", tc.args) // the hint
				require.Empty(t, r.stdout, tc.args)
			}
			// Nothing was revoked.
			require.Equal(t, "active", listKeys(t, dbURL, f.org.ID)[0].Status)
		})
	}
}

func TestAdminUsageErrors(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	f := newFixture(t, dbURL)
	orgID, key := f.org.ID, f.key.ID
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"org create without name", []string{"org", "create"}, "--name is required"},
		{"org create blank name", []string{"org", "create", "--name", "  "}, "--name: organisation name: invalid: must not be empty"},
		{"org create long name", []string{"org", "create", "--name", strings.Repeat("n", 201)}, "--name: organisation name: invalid: 201 characters"},
		{"org create control char", []string{"org", "create", "--name", "a\x01b"}, "--name: organisation name: invalid"},
		{"org create bad plan", []string{"org", "create", "--name", "x", "--plan", "gold"}, `--plan: plan must be standard, business or enterprise, got "gold"`},
		{"enterprise without limit", []string{"org", "create", "--name", "x", "--plan", "enterprise"}, "--hourly-limit is required with --plan enterprise"},
		{"enterprise negative limit", []string{"org", "create", "--name", "x", "--plan", "enterprise", "--hourly-limit", "-3"}, "--hourly-limit must be at least 1"},
		{"standard with limit", []string{"org", "create", "--name", "x", "--hourly-limit", "10"}, "--hourly-limit is only for --plan enterprise; the standard plan's limit is fixed at 1000"},
		{"business with limit", []string{"org", "create", "--name", "x", "--plan", "business", "--hourly-limit", "10"}, "the business plan's limit is fixed at 10000"},
		{"limit not a number", []string{"org", "create", "--name", "x", "--hourly-limit", "many"}, "-hourly-limit"},
		{"org create args", []string{"org", "create", "--name", "x", "extra"}, `admin org create takes no arguments, got "extra"`},
		{"org list args", []string{"org", "list", "extra"}, "takes no arguments"},
		{"org unknown", []string{"org", "delete"}, `unknown command "delete" for aiusage admin org`},

		{"agent create without org", []string{"agent", "create", "--name", "x"}, "--org is required"},
		{"agent create bad org", []string{"agent", "create", "--org", "acme", "--name", "x"}, `--org must be a UUID such as`},
		{"agent create braced org", []string{"agent", "create", "--org", "{" + orgID + "}", "--name", "x"}, `--org must be a UUID`},
		{"agent create urn org", []string{"agent", "create", "--org", "urn:uuid:" + orgID, "--name", "x"}, `--org must be a UUID`},
		{"agent create without name", []string{"agent", "create", "--org", orgID}, "--name is required"},
		{"agent create blank name", []string{"agent", "create", "--org", orgID, "--name", "\t"}, "--name: agent name: invalid"},
		{"agent list without org", []string{"agent", "list"}, "--org is required"},
		{"agent list bad org", []string{"agent", "list", "--org", "x"}, "--org must be a UUID"},

		{"key create without org", []string{"key", "create", "--name", "x"}, "--org is required"},
		{"key create without name", []string{"key", "create", "--org", orgID}, "--name is required"},
		{"key create blank name", []string{"key", "create", "--org", orgID, "--name", " "}, "--name: key name: invalid"},
		{"key create bad type", []string{"key", "create", "--org", orgID, "--name", "x", "--type", "api"}, `--type: key type must be API or Ingestion, got "api"`},
		{"key create past expiry", []string{"key", "create", "--org", orgID, "--name", "x", "--expires", "2020-01-01T00:00:00Z"}, "--expires 2020-01-01T00:00:00Z is in the past"},
		{"key create past expiry offset", []string{"key", "create", "--org", orgID, "--name", "x", "--expires", "2001-02-03T04:05:06-07:00"}, "--expires 2001-02-03T04:05:06-07:00 is in the past"},
		{"key create date only", []string{"key", "create", "--org", orgID, "--name", "x", "--expires", "2099-01-01"}, `--expires must be an RFC 3339 time`},
		{"key create no zone", []string{"key", "create", "--org", orgID, "--name", "x", "--expires", "2099-01-01T00:00:00"}, `--expires must be an RFC 3339 time`},
		{"key create garbage expiry", []string{"key", "create", "--org", orgID, "--name", "x", "--expires", "next year"}, `got "next year"`},
		{"key create both expiries", []string{"key", "create", "--org", orgID, "--name", "x", "--expires", "2099-01-01T00:00:00Z", "--no-expiry"}, "give --expires or --no-expiry, not both"},
		{"key list without org", []string{"key", "list"}, "--org is required"},
		{"key revoke without key", []string{"key", "revoke", "--org", orgID}, "--key is required"},
		{"key revoke bad key", []string{"key", "revoke", "--org", orgID, "--key", key + "x"}, "--key must be a UUID"},
		{"key revoke bad org", []string{"key", "revoke", "--org", "nope", "--key", key}, "--org must be a UUID"},

		{"actor too long", []string{"org", "create", "--name", "x", "--actor", strings.Repeat("a", 201)}, "--actor is 201 characters, at most 200"},
		{"actor control char", []string{"agent", "create", "--org", orgID, "--name", "x", "--actor", "a\nb"}, "--actor must not hold control characters"},
		{"actor not UTF-8", []string{"key", "revoke", "--org", orgID, "--key", key, "--actor", "a\xffb"}, "--actor must be UTF-8"},

		{"audit without org", []string{"audit"}, "--org is required"},
		{"audit bad org", []string{"audit", "--org", "1234"}, "--org must be a UUID"},
		{"audit negative after", []string{"audit", "--org", orgID, "--after", "-1"}, "--after must not be negative"},
		{"audit after not a number", []string{"audit", "--org", orgID, "--after", "x"}, "-after"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := admin(t, dbURL, nil, tc.args...)
			require.Equal(t, ExitUsage, r.code, "stderr: %s", r.stderr)
			require.Contains(t, r.stderr, tc.want)
			require.Contains(t, r.stderr, "aiusage: ")
			require.Empty(t, r.stdout)
		})
	}
	r := runCLI(t, "", nil, "admin")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "admin needs a command")
	r = admin(t, dbURL, map[string]string{"USER": "x\ty"}, "key", "create", "--org", orgID, "--name", "x")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "$USER (the default of --actor) must not hold control characters")

	// None of them changed anything.
	require.Len(t, readAudit(t, dbURL, "--org", orgID), 3)
	var list struct {
		Organisations []org.Organisation `json:"organisations"`
	}
	adminOK(t, dbURL, &list, "org", "list")
	require.Len(t, list.Organisations, 1)
	require.Len(t, listKeys(t, dbURL, orgID), 1)
}

func TestAdminDatabaseErrors(t *testing.T) {
	t.Parallel()
	const org = "00000000-0000-4000-8000-000000000000"
	commands := [][]string{
		{"org", "create", "--name", "x"},
		{"org", "list"},
		{"agent", "create", "--org", org, "--name", "x"},
		{"agent", "list", "--org", org},
		{"key", "create", "--org", org, "--name", "x"},
		{"key", "list", "--org", org},
		{"key", "revoke", "--org", org, "--key", org},
		{"audit", "--org", org},
	}
	for _, args := range commands {
		// A malformed URL: exit 2.
		for _, u := range []string{"mysql://localhost/x", "sqlite://x.db", "postgres://x:secret@[::1"} {
			r := admin(t, u, nil, args...)
			require.Equal(t, ExitUsage, r.code, "%v %s: %s", args, u, r.stderr)
			require.Contains(t, r.stderr, "--database-url: bad database URL")
			require.NotContains(t, r.stderr, "secret")
		}
		// A database that cannot be reached: exit 1.
		for _, u := range []string{"sqlite:" + t.TempDir() + "/no/such/dir/x.db", "postgres://nobody:secret@127.0.0.1:1/x?connect_timeout=5"} {
			r := admin(t, u, nil, args...)
			require.Equal(t, ExitFailure, r.code, "%v %s: %s", args, u, r.stderr)
			require.Contains(t, r.stderr, "--database-url: sqldb: open")
			require.NotContains(t, r.stderr, "secret")
			require.Empty(t, r.stdout)
		}
	}
	// The URL from the environment.
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	r := runCLI(t, "", map[string]string{"AIUSAGE_DATABASE_URL": dbURL}, "admin", "org", "create", "--name", "Acme")
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = admin(t, dbURL, nil, "org", "list")
	require.Contains(t, r.stdout, `"name":"Acme"`)
}
