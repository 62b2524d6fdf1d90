package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// waitingTask creates, on the database at dbURL, an agent with a High Block
// instruction in org and a task that waits for a person.
func waitingTask(t *testing.T, dbURL, orgID string) spec.ReviewTask {
	t.Helper()
	ctx := t.Context()
	db, err := sqldb.Open(ctx, dbURL)
	require.NoError(t, err)
	defer db.Close()
	orgs, err := org.NewStore(ctx, db)
	require.NoError(t, err)
	agent, err := orgs.CreateAgent(ctx, orgID, "Guard "+time.Now().Format("150405.000000"), org.Actor{Type: org.ActorAdmin, Name: "test"})
	require.NoError(t, err)
	_, err = orgs.CreateInstruction(ctx, orgID, org.InstructionCreate{AgentType: spec.AgentTypeDataProtection, Title: "Mergers",
		Trigger: spec.StringMatchTrigger([]string{"Project Falcon"}, false), Action: spec.ActionBlock, Criticality: spec.CriticalityHigh,
		UsedBy: []string{agent.ID}}, org.Actor{Type: org.ActorAdmin, Name: "test"})
	require.NoError(t, err)
	jobs, err := openQueue(ctx, db)
	require.NoError(t, err)
	defer jobs.Close()
	svc, err := reviewapi.New(ctx, reviewapi.Config{DB: db, Orgs: orgs, Secrets: keyring.Ephemeral(), Jobs: jobs})
	require.NoError(t, err)
	task, err := svc.CreateTask(ctx, org.Principal{OrganisationID: orgID, Type: org.KeyTypeAPI},
		spec.ReviewTaskCreate{AgentID: agent.ID, Request: spec.ReviewRequest{Messages: []spec.ReviewMessage{{Role: "user", Content: "Project Falcon"}}}})
	require.NoError(t, err)
	require.Equal(t, spec.StatusRequiresIntervention, task.Status)
	return task
}

func TestAdminReviewDecide(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			var acme, globex org.Organisation
			adminOK(t, dbURL, &acme, "org", "create", "--name", "Acme")
			adminOK(t, dbURL, &globex, "org", "create", "--name", "Globex")
			rex, _ := createUser(t, dbURL, testPassword, "--org", acme.ID, "--email", "rex@acme.test", "--role", "Reviewer")
			createUser(t, dbURL, testPassword, "--org", globex.ID, "--email", "gus@globex.test", "--role", "Administrator")
			createUser(t, dbURL, testPassword, "--org", acme.ID, "--email", "gone@acme.test", "--role", "Reviewer")
			adminOK(t, dbURL, nil, "user", "disable", "--org", acme.ID, "--email", "gone@acme.test")
			task := waitingTask(t, dbURL, acme.ID)

			// Bad command lines: exit 2, naming the flag.
			for _, c := range []struct {
				args []string
				want string
			}{
				{[]string{"--task", task.ID, "--decision", "approve"}, "--as is required"},
				{[]string{"--task", task.ID, "--as", "rex@acme.test"}, "--decision is required"},
				{[]string{"--task", task.ID, "--decision", "maybe", "--as", "rex@acme.test"}, "--decision must be"},
				{[]string{"--task", "x", "--decision", "approve", "--as", "rex@acme.test"}, "--task"},
			} {
				r := admin(t, dbURL, nil, append([]string{"review", "decide"}, c.args...)...)
				require.Equal(t, ExitUsage, r.code, "%v: %s", c.args, r.stderr)
				require.Contains(t, r.stderr, c.want)
			}
			// Refused people: exit 1, and the task still waits.
			for email, want := range map[string]string{
				"nobody@acme.test": "no user with email nobody@acme.test",
				"gus@globex.test":  "gus@globex.test may not decide task",
				"gone@acme.test":   "is disabled",
			} {
				r := admin(t, dbURL, nil, "review", "decide", "--task", task.ID, "--decision", "approve", "--as", email)
				require.Equal(t, ExitFailure, r.code, "%s: %s", email, r.stderr)
				require.Contains(t, r.stderr, want)
			}
			r := admin(t, dbURL, nil, "review", "decide", "--task", task.ID, "--decision", "approve-redacted", "--as", "rex@acme.test")
			require.Equal(t, ExitFailure, r.code, r.stderr)
			require.Contains(t, r.stderr, "no redacted copy")

			var got spec.ReviewTask
			adminOK(t, dbURL, &got, "review", "decide", "--task", task.ID, "--decision", "request-changes", "--as", " REX@acme.test ",
				"--comment", "Leave the code name out.")
			require.Equal(t, spec.StatusChangeRequested, got.Status)
			require.Equal(t, &spec.ReviewDecision{By: spec.DecidedByReviewer, Reviewer: "rex@acme.test", ReviewerID: rex.ID,
				Choice: "request-changes", Comment: "Leave the code name out.", DecidedAt: got.Decision.DecidedAt}, got.Decision)

			// The audit trail names the person.
			r = admin(t, dbURL, nil, "audit", "--org", acme.ID)
			require.Equal(t, ExitOK, r.code, r.stderr)
			require.Contains(t, r.stdout, `"action":"review_task.decided"`)
			require.Contains(t, r.stdout, rex.ID)

			// Final: a second decision is refused.
			r = admin(t, dbURL, nil, "review", "decide", "--task", task.ID, "--decision", "approve", "--as", "rex@acme.test")
			require.Equal(t, ExitFailure, r.code)
			require.Contains(t, r.stderr, "not waiting for a person")
		})
	}
}

func TestAdminReviewSettings(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			var org org.Organisation
			adminOK(t, dbURL, &org, "org", "create", "--name", "Acme")
			type settings struct {
				ReviewTimeout        string `json:"reviewTimeout"`
				ReviewTimeoutSeconds int64  `json:"reviewTimeoutSeconds"`
				TimeoutOutcome       string `json:"timeoutOutcome"`
				DefaultTimeout       bool   `json:"defaultTimeout"`
			}
			var st settings
			adminOK(t, dbURL, &st, "review", "settings", "--org", org.ID)
			require.Equal(t, settings{"24h0m0s", 86400, "reject", true}, st)

			for _, c := range []struct {
				args []string
				want string
			}{
				{[]string{"--org", org.ID, "--timeout", "soon"}, "--timeout must be a duration such as 30m, 24h or 72h, got \"soon\""},
				{[]string{"--org", org.ID, "--timeout", "30s"}, "--timeout must be from 1m0s to 2160h0m0s"},
				{[]string{"--org", org.ID, "--timeout-outcome", "escalate"}, "--timeout-outcome must be reject or approve"},
				{[]string{"--timeout", "1h"}, "--org"},
			} {
				r := admin(t, dbURL, nil, append([]string{"review", "settings"}, c.args...)...)
				require.Equal(t, ExitUsage, r.code, "%v: %s", c.args, r.stderr)
				require.Contains(t, r.stderr, c.want)
			}
			r := admin(t, dbURL, nil, "review", "settings", "--org", "7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918")
			require.Equal(t, ExitFailure, r.code)

			adminOK(t, dbURL, &st, "review", "settings", "--org", org.ID, "--timeout-outcome", "approve")
			require.Equal(t, settings{"24h0m0s", 86400, "approve", true}, st, "the outcome alone keeps the default timeout")
			adminOK(t, dbURL, &st, "review", "settings", "--org", org.ID, "--timeout", "2h", "--actor", "ops")
			require.Equal(t, settings{"2h0m0s", 7200, "approve", false}, st, "the timeout alone keeps the outcome")
			adminOK(t, dbURL, &st, "review", "settings", "--org", org.ID, "--timeout", "0")
			require.Equal(t, settings{"24h0m0s", 86400, "approve", true}, st)

			r = admin(t, dbURL, nil, "audit", "--org", org.ID)
			require.Equal(t, ExitOK, r.code, r.stderr)
			require.Equal(t, 3, strings.Count(r.stdout, `"action":"review_settings.changed"`), r.stdout)
			require.Contains(t, r.stdout, `"name":"ops"`)
			var line map[string]any
			require.NoError(t, json.Unmarshal([]byte(strings.SplitN(r.stdout, "\n", 2)[0]), &line))
		})
	}
}
