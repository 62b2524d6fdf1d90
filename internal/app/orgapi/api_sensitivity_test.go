package orgapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// TestSemanticSensitivityRoundTrips stores trigger.sensitivity of a
// Semantic instruction, returns it on create, get and list, replaces it with
// the trigger on PATCH, and leaves it out when it is not set.
func TestSemanticSensitivityRoundTrips(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		high := e.create(withTrigger(semanticBody("salaries", "Salaries of individual employees"),
			jsonObj{"type": "Semantic", "text": "Salaries of individual employees", "sensitivity": "high"}))
		require.Equal(t, "high", high.Trigger.Sensitivity)
		require.Equal(t, "high", e.get(high.ID).Trigger.Sensitivity)
		require.JSONEq(t, `{"type":"Semantic","text":"Salaries of individual employees","sensitivity":"high"}`,
			string(decodeJSON[map[string]json.RawMessage](t, e.do(get, e.itemPath(high.ID), nil, nil))["trigger"]))
		list := e.list("triggerType=Semantic").Items
		require.Len(t, list, 1)
		require.Equal(t, "high", list[0].Trigger.Sensitivity)

		standard := e.create(withTrigger(semanticBody("health", "Health data"),
			jsonObj{"type": "Semantic", "text": "Health data", "sensitivity": "standard"}))
		require.Equal(t, "standard", e.get(standard.ID).Trigger.Sensitivity)

		plain := e.create(semanticBody("plain", "Unannounced acquisitions"))
		require.Empty(t, plain.Trigger.Sensitivity)
		require.NotContains(t, e.getRaw(plain.ID), "sensitivity", "absent when not set")

		// PATCH replaces the whole trigger: a new sensitivity, or none.
		r := e.do(patch, e.itemPath(plain.ID), jsonObj{"trigger": jsonObj{"type": "Semantic", "text": "Unannounced acquisitions", "sensitivity": "high"}}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		require.Equal(t, "high", e.get(plain.ID).Trigger.Sensitivity)
		r = e.do(patch, e.itemPath(high.ID), jsonObj{"trigger": jsonObj{"type": "Semantic", "text": "Salaries of individual employees"}}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		require.Empty(t, e.get(high.ID).Trigger.Sensitivity)
		// A PATCH of another field keeps it.
		r = e.do(patch, e.itemPath(plain.ID), jsonObj{"title": "acquisitions"}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		require.Equal(t, "high", e.get(plain.ID).Trigger.Sensitivity)
	})
}

// TestSensitivityRejected answers 400 naming trigger.sensitivity for a value
// that is not standard or high, and for a trigger that is not Semantic, on
// create and on PATCH, and changes nothing.
func TestSensitivityRejected(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := semanticBody("sensitivity", "x")
		bad := []badCreate{
			{"low", withTrigger(b, jsonObj{"type": "Semantic", "text": "x", "sensitivity": "low"}), 400, "trigger.sensitivity"},
			{"upper case", withTrigger(b, jsonObj{"type": "Semantic", "text": "x", "sensitivity": "High"}), 400, "trigger.sensitivity"},
			{"empty", withTrigger(b, jsonObj{"type": "Semantic", "text": "x", "sensitivity": ""}), 400, "trigger.sensitivity"},
			{"number", withTrigger(b, jsonObj{"type": "Semantic", "text": "x", "sensitivity": 0.3}), 400, "trigger.sensitivity"},
			{"null", withTrigger(b, jsonObj{"type": "Semantic", "text": "x", "sensitivity": nil}), 400, "trigger.sensitivity"},
			{"Regex", withTrigger(b, jsonObj{"type": "Regex", "pattern": "x", "sensitivity": "high"}), 400, "trigger.sensitivity"},
			{"StringMatch", withTrigger(b, jsonObj{"type": "StringMatch", "values": []string{"x"}, "sensitivity": "standard"}), 400, "trigger.sensitivity"},
		}
		requireRejectedCreates(e, bad)

		in := e.create(semanticBody("kept", "Health data"))
		for _, c := range bad {
			t.Run("patch "+c.name, func(t *testing.T) {
				r := e.withT(t).do(patch, e.itemPath(in.ID), jsonObj{"trigger": c.body.(jsonObj)["trigger"]}, nil)
				requireProblem(t, r, http.StatusBadRequest, "trigger.sensitivity")
			})
		}
		require.Equal(t, in.Trigger, e.get(in.ID).Trigger)
	})
}
