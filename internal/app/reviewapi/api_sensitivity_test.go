package reviewapi_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/spec"
)

// TestAPISemanticSensitivity evaluates one message against the same
// Semantic instruction stored at standard and at high sensitivity, with the
// built-in matcher: the message scores between the two thresholds, so only
// the instruction of high sensitivity holds it. The sensitivity flows from
// the organisation store to the policy as the trigger is.
func TestAPISemanticSensitivity(t *testing.T) {
	t.Parallel()
	const text = "Salaries, bonuses or other compensation of individual employees"
	const message = "Anna earns 82,000 a year plus a bonus."
	score := policy.LexicalMatcher{}.Similarity(message, text)
	require.Greater(t, score, policy.LexicalRecallThreshold)
	require.Less(t, score, policy.DefaultLexicalThreshold)
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, func(c *reviewapi.Config) { c.Policy.Semantic = policy.LexicalMatcher{} })
		tn := h.newTenant("Acme", "", 0)
		agents := map[string]spec.Agent{}
		for _, sens := range []string{"", spec.SensitivityStandard, spec.SensitivityHigh} {
			agent, err := h.orgs.CreateAgent(t.Context(), tn.org.ID, "Agent "+sens, admin)
			require.NoError(t, err)
			tn.addInstruction(agent.ID, spec.InstructionCreate{Title: "Salaries",
				Trigger: spec.Trigger{Type: spec.TriggerSemantic, Text: text, Sensitivity: sens},
				Action:  spec.ActionBlock, Criticality: spec.CriticalityLow})
			agents[sens] = agent
		}
		for _, sens := range []string{"", spec.SensitivityStandard} {
			task := tn.submitTo(t, agents[sens].ID, message)
			require.Equal(t, spec.StatusApproved, task.Status, "sensitivity %q", sens)
		}
		task := tn.submitTo(t, agents[spec.SensitivityHigh].ID, message)
		require.NotEqual(t, spec.StatusApproved, task.Status)
		require.Len(t, task.Reasons, 1, "%+v", task)
		require.Equal(t, "Salaries", task.Reasons[0].Title)
		require.NotEmpty(t, task.Reasons[0].Matches)
	})
}
