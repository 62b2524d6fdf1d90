package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestAdminOrgUpdate changes an organisation's plan, limit and name: each
// change is checked as "admin org create" checks, printed, listed and
// audited with before and after; a refused one changes nothing.
func TestAdminOrgUpdate(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			var o org.Organisation
			adminOK(t, dbURL, &o, "org", "create", "--name", "Acme")
			update := func(args ...string) org.Organisation {
				t.Helper()
				var got org.Organisation
				adminOK(t, dbURL, &got, append([]string{"org", "update", "--org", o.ID}, args...)...)
				return got
			}

			got := update("--plan", "enterprise", "--hourly-limit", "50000")
			require.Equal(t, org.Organisation{ID: o.ID, Name: "Acme", Plan: org.PlanEnterprise, HourlyLimit: 50000, CreatedAt: o.CreatedAt}, got)
			require.Equal(t, 50000, got.RateLimit())
			got = update("--hourly-limit", "7")
			require.Equal(t, 7, got.HourlyLimit)
			got = update("--plan", "business")
			require.Equal(t, org.PlanBusiness, got.Plan)
			require.Zero(t, got.HourlyLimit, "a move away from enterprise drops the limit")
			require.Equal(t, org.BusinessHourlyLimit, got.RateLimit())
			got = update("--name", "Globex")
			require.Equal(t, org.Organisation{ID: o.ID, Name: "Globex", Plan: org.PlanBusiness, CreatedAt: o.CreatedAt}, got)
			require.Equal(t, got, update("--plan", "business"), "no change")

			for _, c := range []struct {
				args []string
				want string
			}{
				{[]string{"--plan", "enterprise"}, "--hourly-limit: invalid: the enterprise plan needs an hourly limit of at least 1"},
				{[]string{"--hourly-limit", "5"}, "--hourly-limit: invalid: an hourly limit is configured only for the enterprise plan"},
				{[]string{"--plan", "standard", "--hourly-limit", "5"}, "only for the enterprise plan"},
				{[]string{"--plan", "enterprise", "--hourly-limit", "0"}, "--hourly-limit must be at least 1, got 0"},
				{[]string{"--plan", "gold"}, `--plan: plan must be standard, business or enterprise, got "gold"`},
				{[]string{"--name", ""}, "--name is required"},
				{[]string{"--name", "bad\x01name"}, "--name"},
				{nil, "nothing to change: give --name, --plan or --hourly-limit"},
			} {
				r := admin(t, dbURL, nil, append([]string{"org", "update", "--org", o.ID}, c.args...)...)
				require.Equal(t, ExitUsage, r.code, "%q: %s", c.args, r.stderr)
				require.Contains(t, r.stderr, c.want, "%q", c.args)
				require.Empty(t, r.stdout)
			}
			r := admin(t, dbURL, nil, "org", "update", "--org", "00000000-0000-0000-0000-000000000000", "--plan", "business")
			require.Equal(t, ExitFailure, r.code, r.stderr)
			require.Contains(t, r.stderr, "not found; 'aiusage admin org list' lists the organisations")
			r = admin(t, dbURL, nil, "org", "update", "--org", "not-a-uuid", "--plan", "business")
			require.Equal(t, ExitUsage, r.code, r.stderr)

			var list struct {
				Organisations []org.Organisation `json:"organisations"`
			}
			adminOK(t, dbURL, &list, "org", "list")
			require.Equal(t, []org.Organisation{got}, list.Organisations, "the refused updates changed nothing")

			// Each change is in the audit trail, with before and after.
			r = admin(t, dbURL, nil, "audit", "--org", o.ID)
			require.Equal(t, ExitOK, r.code, r.stderr)
			var updates []org.AuditRecord
			dec := json.NewDecoder(strings.NewReader(r.stdout))
			for dec.More() {
				var rec org.AuditRecord
				require.NoError(t, dec.Decode(&rec))
				if rec.Action == org.AuditOrganisationUpdated {
					updates = append(updates, rec)
				}
			}
			require.Len(t, updates, 4)
			last := updates[3]
			require.Equal(t, "organisation", last.ResourceType)
			require.Equal(t, o.ID, last.ResourceID)
			require.Equal(t, org.ActorAdmin, last.Actor.Type)
			require.JSONEq(t, `{"id":"`+o.ID+`","name":"Acme","plan":"business","createdAt":"`+o.CreatedAt.String()+`"}`, string(last.Before))
			require.JSONEq(t, `{"id":"`+o.ID+`","name":"Globex","plan":"business","createdAt":"`+o.CreatedAt.String()+`"}`, string(last.After))
		})
	}
}

// TestAdminOrgUpdateRateLimit: the review-task API of a running service
// counts against the plan the operator sets with "admin org update": a
// lower limit refuses, a higher one admits again.
func TestAdminOrgUpdateRateLimit(t *testing.T) {
	t.Parallel()
	s := startHardenedService(t)
	adminOK(t, s.dbURL, nil, "org", "update", "--org", s.org, "--plan", "enterprise", "--hourly-limit", "2")
	for range 2 {
		status, b, hdr := s.statusWith(t, "/review-tasks", s.key)
		require.Equal(t, http.StatusOK, status, string(b))
		require.Equal(t, `"enterprise";q=2;w=3600`, hdr.Get("RateLimit-Policy"))
	}
	status, b, _ := s.statusWith(t, "/review-tasks", s.key)
	require.Equal(t, http.StatusTooManyRequests, status, string(b))

	// Another process changed the plan: the service follows within its
	// cache time (5 s).
	adminOK(t, s.dbURL, nil, "org", "update", "--org", s.org, "--plan", "business")
	deadline := time.Now().Add(8 * time.Second)
	for {
		status, b, hdr := s.statusWith(t, "/review-tasks", s.key)
		if status == http.StatusOK {
			require.Equal(t, `"business";q=10000;w=3600`, hdr.Get("RateLimit-Policy"))
			break
		}
		require.Equal(t, http.StatusTooManyRequests, status, string(b))
		require.True(t, time.Now().Before(deadline), "the new plan is not applied")
		time.Sleep(250 * time.Millisecond)
	}
}
