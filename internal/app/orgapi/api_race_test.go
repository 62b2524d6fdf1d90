package orgapi_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// racers is how many requests race each other.
const racers = 20

// race sends racers requests at once, made by req(i), and returns the answers.
func race(req func(i int) response) []response {
	out := make([]response, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			<-start
			out[i] = req(i)
		})
	}
	close(start)
	wg.Wait()
	return out
}

// statuses counts the answers by status.
func statuses(rs []response) map[int]int {
	out := map[int]int{}
	for _, r := range rs {
		out[r.Status]++
	}
	return out
}

func TestConcurrentCreatesRaceForTheLastPlace(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		agent, other := e.Agents[0], e.Agents[1]
		e.fill(agent.ID, 99)
		for round := range 3 {
			require.Equal(t, 99, e.counts()[agent.ID])
			rs := race(func(i int) response {
				usedBy := []string{agent.ID}
				if i%2 == 1 { // half of them also take a place on an agent with room
					usedBy = []string{other.ID, agent.ID}
				}
				return e.do(post, e.listPath(), with(regexBody(fmt.Sprintf("race %d.%d", round, i)), "usedBy", usedBy), nil)
			})
			require.Equal(t, map[int]int{http.StatusCreated: 1, http.StatusConflict: racers - 1}, statuses(rs), "round %d", round)
			var winner spec.Instruction
			for _, r := range rs {
				if r.Status == http.StatusCreated {
					winner = decodeJSON[spec.Instruction](t, r)
				} else {
					requireAgentFull(t, r, agent)
				}
			}
			counts := e.counts()
			require.Equal(t, 100, counts[agent.ID], "round %d", round)
			require.Equal(t, 100, e.total("agentId="+agent.ID), "round %d", round)
			require.Equal(t, 100, e.total(""), "round %d", round)
			wantOther := 0
			if slices.Contains(winner.UsedBy, other.ID) {
				wantOther = 1
			}
			require.Equal(t, wantOther, counts[other.ID], "round %d: the losers moved the other agent's count", round)
			require.Equal(t, wantOther, e.total("agentId="+other.ID), "round %d", round)

			// Free the place for the next round.
			r := e.do(del, e.itemPath(winner.ID), nil, nil)
			require.Equal(t, http.StatusNoContent, r.Status, "%s", r)
		}
	})
}

func TestConcurrentPatchesRaceForTheLastPlaces(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		agent := e.Agents[0]
		e.fill(agent.ID, 95)
		var targets []spec.Instruction
		for i := range racers {
			targets = append(targets, e.create(with(regexBody(fmt.Sprintf("target %d", i)), "usedBy", []string{e.Agents[1].ID})))
		}
		rs := race(func(i int) response {
			return e.do(patch, e.itemPath(targets[i].ID), jsonObj{"usedBy": []string{e.Agents[1].ID, agent.ID}}, nil)
		})
		require.Equal(t, map[int]int{http.StatusOK: 5, http.StatusConflict: racers - 5}, statuses(rs))
		for i, r := range rs {
			got := e.get(targets[i].ID)
			if r.Status == http.StatusConflict {
				requireAgentFull(t, r, agent)
				require.Equal(t, targets[i], got, "a failed PATCH changed the instruction")
			} else {
				require.ElementsMatch(t, []string{e.Agents[1].ID, agent.ID}, got.UsedBy)
			}
		}
		require.Equal(t, 100, e.counts()[agent.ID])
		require.Equal(t, 100, e.total("agentId="+agent.ID))
		require.Equal(t, racers, e.counts()[e.Agents[1].ID])
	})
}

func TestConcurrentCreatesWithOneAssessmentID(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		a := e.Agents[2].ID
		rs := race(func(i int) response {
			return e.do(post, e.listPath(), with(with(regexBody(fmt.Sprintf("asmt %d", i)), "assessmentId", "asmt-race"), "usedBy", []string{a}), nil)
		})
		require.Equal(t, map[int]int{http.StatusCreated: 1, http.StatusConflict: racers - 1}, statuses(rs))
		for _, r := range rs {
			if r.Status == http.StatusConflict {
				requireProblem(t, r, http.StatusConflict, "assessmentId")
			}
		}
		require.Equal(t, 1, e.total(""))
		require.Equal(t, 1, e.counts()[a])
	})
}

// Concurrent creates, patches and deletes of many instructions leave every
// agent's instructionCount equal to the number of instructions listing it.
func TestConcurrentChangesKeepAgentCountsConsistent(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		for i := range 2 { // five agents in all
			a, err := e.store.CreateAgent(t.Context(), e.Org.ID, fmt.Sprintf("extra %d", i), adminActor)
			require.NoError(t, err)
			e.Agents = append(e.Agents, a)
		}
		agentIDs := make([]string, len(e.Agents))
		for i, a := range e.Agents {
			agentIDs[i] = a.ID
		}
		subset := func(rng *rand.Rand) []string {
			out := []string{}
			for _, id := range agentIDs {
				if rng.IntN(2) == 0 {
					out = append(out, id)
				}
			}
			rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
			return out
		}
		seedRng := rand.New(rand.NewPCG(1, 2))
		var mu sync.Mutex
		var pool []string
		for i := range 30 {
			pool = append(pool, e.create(with(regexBody(fmt.Sprintf("seed %d", i)), "usedBy", subset(seedRng))).ID)
		}
		pick := func(rng *rand.Rand) string {
			mu.Lock()
			defer mu.Unlock()
			return pool[rng.IntN(len(pool))]
		}

		var wg sync.WaitGroup
		for g := range racers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 99))
				for op := range 12 {
					switch n := rng.IntN(10); {
					case n < 6:
						r := e.do(patch, e.itemPath(pick(rng)), jsonObj{"usedBy": subset(rng)}, nil)
						if r.Status != http.StatusOK && r.Status != http.StatusNotFound {
							t.Errorf("patch: %s", r)
						}
					case n < 8:
						r := e.do(post, e.listPath(), with(regexBody(fmt.Sprintf("g%d op%d", g, op)), "usedBy", subset(rng)), nil)
						if r.Status != http.StatusCreated {
							t.Errorf("create: %s", r)
							continue
						}
						var in spec.Instruction
						if err := json.Unmarshal(r.Body, &in); err != nil || in.ID == "" {
							t.Errorf("create: %s: %v", r, err)
							continue
						}
						mu.Lock()
						pool = append(pool, in.ID)
						mu.Unlock()
					default:
						r := e.do(del, e.itemPath(pick(rng)), nil, nil)
						if r.Status != http.StatusNoContent && r.Status != http.StatusNotFound {
							t.Errorf("delete: %s", r)
						}
					}
				}
			})
		}
		wg.Wait()
		require.False(t, t.Failed())

		// Every agent's count equals the instructions that list it, by the
		// agentId filter and by reading every instruction's usedBy.
		counts := e.counts()
		require.Len(t, counts, len(agentIDs))
		listed := map[string]int{}
		total := e.total("")
		for page := 1; (page-1)*100 < total; page++ {
			for _, in := range e.list(fmt.Sprintf("pageSize=100&page=%d", page)).Items {
				for _, a := range in.UsedBy {
					listed[a]++
				}
			}
		}
		for _, a := range agentIDs {
			require.Equal(t, e.total("agentId="+a), counts[a], "agent %s: instructionCount against the agentId filter", a)
			require.Equal(t, listed[a], counts[a], "agent %s: instructionCount against the usedBy lists", a)
		}
	})
}
