package orgapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// ==================================================================== patch

func TestPatchChangesOnlyTheFieldsGiven(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		cat := uuid.NewString()
		orig := e.create(with(with(with(with(regexBody("original"), "categoryId", cat), "usedBy", []string{e.Agents[0].ID}),
			"assessmentId", "asmt-7"), "allowRedaction", true))
		e.clock.Advance(5*time.Second + 250*time.Millisecond)

		steps := []struct {
			body  jsonObj
			apply func(*spec.Instruction)
		}{
			{jsonObj{"criticality": "High"}, func(in *spec.Instruction) { in.Criticality = "High" }},
			{jsonObj{"title": "renamed"}, func(in *spec.Instruction) { in.Title = "renamed" }},
			{jsonObj{"action": "Allow"}, func(in *spec.Instruction) { in.Action = "Allow" }},
			{jsonObj{"allowRedaction": false}, func(in *spec.Instruction) { in.AllowRedaction = false }},
			{jsonObj{"agentType": "DataProtection", "categoryId": nil}, func(in *spec.Instruction) { in.CategoryID = nil }},
			{jsonObj{"categoryId": cat}, func(in *spec.Instruction) { c := cat; in.CategoryID = &c }},
			{jsonObj{"trigger": jsonObj{"type": "StringMatch", "values": []string{"Falcon"}, "isCaseSensitive": false}},
				func(in *spec.Instruction) { in.Trigger = spec.StringMatchTrigger([]string{"Falcon"}, false) }},
			{jsonObj{"assessmentId": "asmt-8"}, func(in *spec.Instruction) { s := "asmt-8"; in.AssessmentID = &s }},
		}
		want := orig
		for i, s := range steps {
			e.clock.Advance(time.Second)
			r := e.do(patch, e.itemPath(orig.ID), s.body, nil)
			require.Equal(t, http.StatusOK, r.Status, "step %d: %s", i, r)
			got := decodeJSON[spec.Instruction](t, r)
			s.apply(&want)
			want.UpdatedAt = spec.NewTime(e.clock.Now())
			require.Equal(t, want, got, "step %d", i)
			require.Equal(t, orig.CreatedAt, got.CreatedAt)
			m := decodeJSON[map[string]any](t, r)
			require.NoError(t, spec.CheckTimestampMillis(m["updatedAt"].(string)))
			require.JSONEq(t, string(r.Body), e.getRaw(orig.ID), "step %d: GET differs from the PATCH answer", i)
		}
	})
}

func TestPatchNullIsOnlyForCategoryAndAssessment(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		in := e.create(with(with(regexBody("nulls"), "categoryId", uuid.NewString()), "usedBy", []string{e.Agents[0].ID}))
		e.clock.Advance(time.Second)
		before := e.state()
		item := e.getRaw(in.ID)
		for _, f := range []string{"title", "agentType", "trigger", "action", "criticality", "usedBy", "allowRedaction"} {
			t.Run(f, func(t *testing.T) {
				e := e.withT(t)
				r := e.do(patch, e.itemPath(in.ID), jsonObj{f: nil}, nil)
				requireProblem(t, r, http.StatusBadRequest, f)
			})
		}
		e.requireUnchanged(before)
		require.JSONEq(t, item, e.getRaw(in.ID))

		r := e.do(patch, e.itemPath(in.ID), jsonObj{"categoryId": nil}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		m := decodeJSON[map[string]any](t, r)
		v, ok := m["categoryId"]
		require.True(t, ok)
		require.Nil(t, v)
		require.Nil(t, e.get(in.ID).CategoryID)
	})
}

func TestPatchRejectsReadOnlyAndUnknownFields(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		in := e.create(regexBody("read-only"))
		e.clock.Advance(time.Second)
		before := e.state()
		for f, v := range map[string]any{
			"id":             uuid.NewString(),
			"createdAt":      "2020-01-01T00:00:00.000Z",
			"updatedAt":      "2020-01-01T00:00:00.000Z",
			"foo":            1,
			"Title":          "x",
			"organisationId": e.Org.ID,
		} {
			t.Run(f, func(t *testing.T) {
				e := e.withT(t)
				r := e.do(patch, e.itemPath(in.ID), jsonObj{f: v, "title": "must not change"}, nil)
				requireProblem(t, r, http.StatusBadRequest, f)
			})
		}
		e.requireUnchanged(before)
	})
}

// A client that edits an instruction it fetched sends the whole object back,
// read-only fields included: unchanged, they are accepted.
func TestPatchAcceptsUnchangedReadOnlyFields(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		in := e.create(with(regexBody("fetched"), "usedBy", []string{e.Agents[0].ID}))
		e.clock.Advance(time.Second)

		// The fetched object, edited and sent back whole.
		fetched := decodeJSON[map[string]any](t, e.do(http.MethodGet, e.itemPath(in.ID), nil, nil))
		fetched["title"] = "edited"
		r := e.do(patch, e.itemPath(in.ID), jsonObj(fetched), nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		got := decodeJSON[spec.Instruction](t, r)
		require.Equal(t, "edited", got.Title)
		require.Equal(t, in.ID, got.ID)
		require.Equal(t, in.CreatedAt, got.CreatedAt)
		require.Equal(t, spec.NewTime(e.clock.Now()), got.UpdatedAt)

		// The id in upper case is the same id.
		e.clock.Advance(time.Second)
		r = e.do(patch, e.itemPath(in.ID), jsonObj{"id": strings.ToUpper(in.ID), "createdAt": in.CreatedAt.String(),
			"updatedAt": got.UpdatedAt.String(), "criticality": "High"}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		got = decodeJSON[spec.Instruction](t, r)
		require.Equal(t, spec.CriticalityHigh, got.Criticality)

		// Sent again with the updatedAt of the first fetch, which is no longer
		// current: 400 naming updatedAt, and nothing changes.
		other := e.create(regexBody("other"))
		before := e.state()
		fetched["title"] = "stale edit"
		r = e.do(patch, e.itemPath(in.ID), jsonObj(fetched), nil)
		requireProblem(t, r, http.StatusBadRequest, "updatedAt")
		require.Contains(t, string(r.Body), got.UpdatedAt.String(), "the answer names the current value")
		e.requireUnchanged(before)

		// Another instruction's id: 400 naming id.
		r = e.do(patch, e.itemPath(in.ID), jsonObj{"id": other.ID, "title": "x"}, nil)
		requireProblem(t, r, http.StatusBadRequest, "id")
		// A malformed timestamp: 400 naming it, as any schema violation.
		r = e.do(patch, e.itemPath(in.ID), jsonObj{"createdAt": "2026-01-01T00:00:00+02:00"}, nil)
		requireProblem(t, r, http.StatusBadRequest, "createdAt")
		e.requireUnchanged(before)
	})
}

func TestPatchAppliesTheCreateRules(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		in := e.create(with(regexBody("rules"), "usedBy", []string{e.Agents[0].ID}))
		e.clock.Advance(time.Second)
		before := e.state()
		a0 := e.Agents[0].ID
		for _, c := range []struct {
			name  string
			body  jsonObj
			field string
		}{
			{"agentType", jsonObj{"agentType": "Other"}, "agentType"},
			{"empty title", jsonObj{"title": ""}, "title"},
			{"long title", jsonObj{"title": strings.Repeat("é", 201)}, "title"},
			{"title type", jsonObj{"title": 5}, "title"},
			{"action", jsonObj{"action": "Deny"}, "action"},
			{"criticality", jsonObj{"criticality": "Medium"}, "criticality"},
			{"bad RE2", jsonObj{"trigger": jsonObj{"type": "Regex", "pattern": "(?=x)"}}, "trigger.pattern"},
			{"unclosed group", jsonObj{"trigger": jsonObj{"type": "Regex", "pattern": "a(b"}}, "trigger.pattern"},
			{"foreign trigger field", jsonObj{"trigger": jsonObj{"type": "Semantic", "text": "x", "pattern": "x"}}, "trigger.pattern"},
			{"trigger without its field", jsonObj{"trigger": jsonObj{"type": "StringMatch"}}, "trigger.values"},
			{"pattern too long", jsonObj{"trigger": jsonObj{"type": "Regex", "pattern": strings.Repeat("a", 1001)}}, "trigger.pattern"},
			{"value too long", jsonObj{"trigger": jsonObj{"type": "StringMatch", "values": []string{strings.Repeat("v", 201)}}}, "trigger.values"},
			{"categoryId", jsonObj{"categoryId": "pii"}, "categoryId"},
			{"usedBy not uuid", jsonObj{"usedBy": []string{"x"}}, "usedBy"},
			{"usedBy repeated", jsonObj{"usedBy": []string{a0, a0}}, "usedBy"},
			{"usedBy unknown agent", jsonObj{"usedBy": []string{uuid.NewString()}}, "usedBy"},
			{"usedBy string", jsonObj{"usedBy": "x"}, "usedBy"},
			{"trigger array", jsonObj{"trigger": []any{}}, "trigger"},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := e.withT(t)
				r := e.do(patch, e.itemPath(in.ID), c.body, nil)
				require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", c.name, r)
				requireProblem(t, r, http.StatusBadRequest, c.field)
			})
		}
		e.requireUnchanged(before)
		requireProblem(t, e.do(patch, e.itemPath(uuid.NewString()), jsonObj{"title": "x"}, nil), http.StatusNotFound)
		requireProblem(t, e.do(patch, e.itemPath("not-a-uuid"), jsonObj{"title": "x"}, nil), http.StatusNotFound)
	})
}

func TestPatchAllowRedactionRules(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		redacting := e.create(with(regexBody("redacting"), "allowRedaction", true))
		semantic := e.create(semanticBody("semantic", "text"))
		e.clock.Advance(time.Second)
		before := e.state()

		// Changing the trigger to Semantic while allowRedaction stays true.
		r := e.do(patch, e.itemPath(redacting.ID), jsonObj{"trigger": jsonObj{"type": "Semantic", "text": "x"}}, nil)
		requireProblem(t, r, http.StatusBadRequest, "allowRedaction")
		r = e.do(patch, e.itemPath(redacting.ID), jsonObj{"trigger": jsonObj{"type": "Semantic", "text": "x"}, "allowRedaction": true}, nil)
		requireProblem(t, r, http.StatusBadRequest, "allowRedaction")
		// Setting allowRedaction on a Semantic instruction.
		r = e.do(patch, e.itemPath(semantic.ID), jsonObj{"allowRedaction": true}, nil)
		requireProblem(t, r, http.StatusBadRequest, "allowRedaction")
		e.requireUnchanged(before)

		// Both at once are fine.
		r = e.do(patch, e.itemPath(redacting.ID), jsonObj{"trigger": jsonObj{"type": "Semantic", "text": "x"}, "allowRedaction": false}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		got := decodeJSON[spec.Instruction](t, r)
		require.False(t, got.AllowRedaction)
		require.Equal(t, spec.Trigger{Type: "Semantic", Text: "x"}, got.Trigger)
		r = e.do(patch, e.itemPath(semantic.ID), jsonObj{"trigger": jsonObj{"type": "StringMatch", "values": []string{"v"}}, "allowRedaction": true}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		require.True(t, decodeJSON[spec.Instruction](t, r).AllowRedaction)
	})
}

func TestPatchTriggerReplacesTheWholeTrigger(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		in := e.create(withTrigger(regexBody("trigger"), jsonObj{"type": "Regex", "pattern": "abc", "isCaseSensitive": false}))
		r := e.do(patch, e.itemPath(in.ID), jsonObj{"trigger": jsonObj{"type": "Regex", "pattern": "xyz"}}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		m := decodeJSON[map[string]any](t, r)
		require.Equal(t, map[string]any{"type": "Regex", "pattern": "xyz", "isCaseSensitive": true}, m["trigger"])
		r = e.do(patch, e.itemPath(in.ID), jsonObj{"trigger": jsonObj{"type": "StringMatch", "values": []string{"a"}}}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		m = decodeJSON[map[string]any](t, r)
		require.Equal(t, map[string]any{"type": "StringMatch", "values": []any{"a"}, "isCaseSensitive": true}, m["trigger"])
		// The list filter follows the new trigger type.
		require.Equal(t, []string{in.ID}, ids(e.list("triggerType=StringMatch").Items))
		require.Empty(t, e.list("triggerType=Regex").Items)
		// And search follows the new values.
		require.Empty(t, e.list("search=abc").Items)
	})
}

func TestPatchUsedByReplacesTheList(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		a0, a1, a2 := e.Agents[0].ID, e.Agents[1].ID, e.Agents[2].ID
		in := e.create(with(regexBody("assigned"), "usedBy", []string{a0, a1}))
		other := e.create(with(regexBody("other"), "usedBy", []string{a0}))
		require.Equal(t, map[string]int{a0: 2, a1: 1, a2: 0}, e.counts())

		r := e.do(patch, e.itemPath(in.ID), jsonObj{"usedBy": []string{a1, a2}}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		require.ElementsMatch(t, []string{a1, a2}, decodeJSON[spec.Instruction](t, r).UsedBy)
		require.Equal(t, map[string]int{a0: 1, a1: 1, a2: 1}, e.counts())
		require.Equal(t, []string{other.ID}, ids(e.list("agentId="+a0).Items))
		require.Equal(t, []string{in.ID}, ids(e.list("agentId="+a2).Items))

		r = e.do(patch, e.itemPath(in.ID), jsonObj{"usedBy": []string{}}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		m := decodeJSON[map[string]any](t, r)
		require.Equal(t, []any{}, m["usedBy"])
		require.Equal(t, map[string]int{a0: 1, a1: 0, a2: 0}, e.counts())
		require.Empty(t, e.list("agentId="+a1).Items)
		require.Empty(t, e.list("agentId="+a2).Items)
		// The instruction still exists, assigned to nobody.
		require.Equal(t, []string{}, e.get(in.ID).UsedBy)
		require.Equal(t, 2, e.total(""))
	})
}

func TestPatchEmptyBodyChangesNothing(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		in := e.create(with(regexBody("stays"), "usedBy", []string{e.Agents[0].ID}))
		item := e.getRaw(in.ID)
		e.clock.Advance(time.Hour)
		before := e.state()
		r := e.do(patch, e.itemPath(in.ID), jsonObj{}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		require.JSONEq(t, item, string(r.Body))
		got := decodeJSON[spec.Instruction](t, r)
		require.Equal(t, in.UpdatedAt, got.UpdatedAt, "updatedAt moved")
		e.requireUnchanged(before)
		require.JSONEq(t, item, e.getRaw(in.ID))
	})
}

// =================================================================== delete

func TestDeleteInstruction(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		a0, a1, a2 := e.Agents[0].ID, e.Agents[1].ID, e.Agents[2].ID
		in := e.create(with(regexBody("doomed"), "usedBy", []string{a0, a1}))
		keep := e.create(with(regexBody("kept"), "usedBy", []string{a0}))
		require.Equal(t, map[string]int{a0: 2, a1: 1, a2: 0}, e.counts())

		r := e.do(del, e.itemPath(in.ID), nil, nil)
		require.Equal(t, http.StatusNoContent, r.Status, "%s", r)
		require.Empty(t, r.Body)
		require.Equal(t, map[string]int{a0: 1, a1: 0, a2: 0}, e.counts())
		require.Equal(t, []string{keep.ID}, ids(e.list("agentId="+a0).Items))
		require.Empty(t, e.list("agentId="+a1).Items)
		require.Equal(t, []string{keep.ID}, ids(e.list("").Items))

		requireProblem(t, e.do(get, e.itemPath(in.ID), nil, nil), http.StatusNotFound)
		before := e.state()
		requireProblem(t, e.do(del, e.itemPath(in.ID), nil, nil), http.StatusNotFound)
		requireProblem(t, e.do(patch, e.itemPath(in.ID), jsonObj{"title": "back"}, nil), http.StatusNotFound)
		requireProblem(t, e.do(del, e.itemPath(uuid.NewString()), nil, nil), http.StatusNotFound)
		requireProblem(t, e.do(del, e.itemPath("not-a-uuid"), nil, nil), http.StatusNotFound)
		e.requireUnchanged(before)
	})
}
