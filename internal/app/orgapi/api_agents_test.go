package orgapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// =========================================================== agent limit

// fullAgent fills the agent of e's with the greatest id to 100 instructions
// and returns it, so that every other agent sorts before it.
func fullAgent(e *testEnv) (spec.Agent, []spec.Instruction) {
	e.t.Helper()
	agents := slices.Clone(e.Agents)
	slices.SortFunc(agents, func(a, b spec.Agent) int { return strings.Compare(a.ID, b.ID) })
	full := agents[len(agents)-1]
	ins := e.fill(full.ID, spec.MaxInstructionsPerAgent)
	require.Equal(e.t, 100, e.counts()[full.ID])
	return full, ins
}

// requireAgentFull asserts the 409 that names a full agent.
func requireAgentFull(t *testing.T, r response, agent spec.Agent) {
	t.Helper()
	p := requireProblem(t, r, http.StatusConflict, "usedBy")
	require.Contains(t, p.Detail, agent.Name, "detail names the agent")
	require.Contains(t, p.Detail, agent.ID, "detail names the agent's id")
	require.Equal(t, map[string]any{"id": agent.ID, "name": agent.Name}, p.Extensions["agent"], "%s", r)
}

func TestAgentLimitOnCreate(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		full, fillers := fullAgent(e)
		var others []string
		for _, a := range e.Agents {
			if a.ID != full.ID {
				others = append(others, a.ID)
			}
		}
		before := e.state()
		require.Equal(t, 100, e.total("agentId="+full.ID))

		r := e.do(post, e.listPath(), with(regexBody("101st"), "usedBy", []string{full.ID}), nil)
		requireAgentFull(t, r, full)
		e.requireUnchanged(before)

		// Assigned to non-full agents too: still 409, and their counts do not move
		// (every other agent's id sorts before the full one's).
		r = e.do(post, e.listPath(), with(regexBody("101st"), "usedBy", append(slices.Clone(others), full.ID)), nil)
		requireAgentFull(t, r, full)
		r = e.do(post, e.listPath(), with(regexBody("101st"), "usedBy", []string{full.ID, others[0]}), nil)
		requireAgentFull(t, r, full)
		e.requireUnchanged(before)
		// A retry does not help.
		r = e.do(post, e.listPath(), with(regexBody("101st"), "usedBy", []string{full.ID}), nil)
		requireAgentFull(t, r, full)

		// Unassigned creates are not limited by the full agent.
		e.create(regexBody("unassigned"))

		// After a delete the agent is at 99 and takes one more.
		r = e.do(del, e.itemPath(fillers[0].ID), nil, nil)
		require.Equal(t, http.StatusNoContent, r.Status, "%s", r)
		require.Equal(t, 99, e.counts()[full.ID])
		in := e.create(with(regexBody("100th again"), "usedBy", []string{full.ID}))
		require.Equal(t, []string{full.ID}, in.UsedBy)
		require.Equal(t, 100, e.counts()[full.ID])
		require.Equal(t, 100, e.total("agentId="+full.ID))
		r = e.do(post, e.listPath(), with(regexBody("101st"), "usedBy", []string{full.ID}), nil)
		requireAgentFull(t, r, full)
	})
}

func TestAgentLimitOnPatch(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		full, fillers := fullAgent(e)
		var other string
		for _, a := range e.Agents {
			if a.ID != full.ID {
				other = a.ID
				break
			}
		}
		x := e.create(with(regexBody("not on the full agent"), "usedBy", []string{other}))
		e.clock.Advance(time.Second)
		before := e.state()
		item := e.getRaw(x.ID)
		for _, c := range []struct {
			name string
			body jsonObj
		}{
			{"adding the full agent", jsonObj{"usedBy": []string{other, full.ID}}},
			{"moving to the full agent", jsonObj{"usedBy": []string{full.ID}}},
			{"moving with another change", jsonObj{"usedBy": []string{full.ID}, "title": "renamed too"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := e.withT(t)
				r := e.do(patch, e.itemPath(x.ID), c.body, nil)
				requireAgentFull(t, r, full)
			})
		}
		e.requireUnchanged(before)
		require.JSONEq(t, item, e.getRaw(x.ID))

		// An instruction already on the full agent can still be changed.
		r := e.do(patch, e.itemPath(fillers[0].ID), jsonObj{"title": "renamed", "usedBy": []string{full.ID, other}}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		require.Equal(t, 100, e.counts()[full.ID])

		// Taking an instruction off the full agent frees a place.
		r = e.do(patch, e.itemPath(fillers[1].ID), jsonObj{"usedBy": []string{}}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		require.Equal(t, 99, e.counts()[full.ID])
		r = e.do(patch, e.itemPath(x.ID), jsonObj{"usedBy": []string{other, full.ID}}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		require.Equal(t, 100, e.counts()[full.ID])
	})
}

// =================================================================== agents

func TestAgentsEndpoint(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		e.create(with(regexBody("one"), "usedBy", []string{e.Agents[1].ID}))
		r := e.do(get, e.agentsPath(), nil, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		arr := decodeJSON[[]map[string]any](t, r)
		require.Len(t, arr, len(e.Agents))
		byID := map[string]map[string]any{}
		for _, a := range arr {
			require.Equal(t, []string{"id", "instructionCount", "name", "type"}, keysOf(a))
			require.Equal(t, "DataProtection", a["type"])
			byID[a["id"].(string)] = a
		}
		for i, a := range e.Agents {
			got, ok := byID[a.ID]
			require.True(t, ok, "agent %s not listed", a.ID)
			require.Equal(t, a.Name, got["name"])
			want := 0
			if i == 1 {
				want = 1
			}
			require.EqualValues(t, want, got["instructionCount"])
		}

		// An organisation without agents gets [].
		lone := e.newTenant("Lonely", 0, "lonely-key")
		r = e.doKey(lone.Key.Secret, get, lone.agentsPath(), nil, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		require.Equal(t, "application/json", mediaType(t, r))
		require.JSONEq(t, `[]`, string(r.Body))
	})
}
