package orgapi_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// An instruction may be assigned to many agents at once; the counts follow
// on create, on a PATCH that swaps half of them, and on delete.
func TestManyAgentsInOneUsedBy(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		big := e.newTenant("Big", 600, "big-bot")
		e.tenant = big
		agentIDs := make([]string, len(big.Agents))
		for i, a := range big.Agents {
			agentIDs[i] = a.ID
		}
		body := regexBody("many agents")
		body["usedBy"] = agentIDs[:400]
		in := e.create(body)
		require.Len(t, in.UsedBy, 400)
		counts := e.counts()
		for i, id := range agentIDs {
			require.Equal(t, map[bool]int{true: 1, false: 0}[i < 400], counts[id], "agent %d", i)
		}

		r := e.do(http.MethodPatch, e.itemPath(in.ID), jsonObj{"usedBy": agentIDs[200:600]}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		counts = e.counts()
		for i, id := range agentIDs {
			require.Equal(t, map[bool]int{true: 1, false: 0}[i >= 200], counts[id], "agent %d after the patch", i)
		}
		require.Equal(t, 1, e.total("agentId="+agentIDs[599]))
		require.Equal(t, 0, e.total("agentId="+agentIDs[0]))

		r = e.do(http.MethodDelete, e.itemPath(in.ID), nil, nil)
		require.Equal(t, http.StatusNoContent, r.Status, "%s", r)
		counts = e.counts()
		for i, id := range agentIDs {
			require.Zero(t, counts[id], "agent %d after the delete", i)
		}
	})
}

// Two instructions swapping their assessmentIds at the same time both get
// 409 (each id is taken by the other), never a 5xx, even when PostgreSQL
// detects the deadlock the swap makes.
func TestConcurrentAssessmentSwap(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		a, b := regexBody("a"), regexBody("b")
		a["assessmentId"], b["assessmentId"] = "asmt-x", "asmt-y"
		ia, ib := e.create(a), e.create(b)
		for range 10 {
			var wg sync.WaitGroup
			statuses := make([]int, 2)
			for i, c := range []struct{ id, to string }{{ia.ID, "asmt-y"}, {ib.ID, "asmt-x"}} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					statuses[i] = e.do(http.MethodPatch, e.itemPath(c.id), jsonObj{"assessmentId": c.to}, nil).Status
				}()
			}
			wg.Wait()
			require.Equal(t, []int{http.StatusConflict, http.StatusConflict}, statuses)
		}
		require.Equal(t, "asmt-x", *e.get(ia.ID).AssessmentID)
		require.Equal(t, "asmt-y", *e.get(ib.ID).AssessmentID)
	})
}

// The audit trail is numbered 1, 2, 3, ... per organisation with no gap,
// also when many changes commit at once, so a reader following it with
// "after the last number seen" misses nothing.
func TestAuditSequenceHasNoGaps(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		other := e.newTenant("Other", 1, "other-bot")
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tn := e.tenant
				if i%3 == 0 {
					tn = other
				}
				r := e.doKey(tn.Key.Secret, http.MethodPost, tn.listPath(), stringMatchBody("t", "v"), nil)
				require.Equal(t, http.StatusCreated, r.Status, "%s", r)
			}()
		}
		wg.Wait()
		for _, org := range []string{e.Org.ID, other.Org.ID} {
			recs := e.audit(org)
			for i, rec := range recs {
				require.Equal(t, int64(i+1), rec.Seq, "record %d of %s", i, org)
				require.Equal(t, org, rec.OrganisationID)
			}
			// Reading after any number gives exactly the rest.
			rest, err := e.store.Audit(e.ctx(), org, 5, 1000)
			require.NoError(t, err)
			require.Len(t, rest, len(recs)-5)
		}
		created := 0
		for _, rec := range e.audit(e.Org.ID) {
			if rec.Action == "instruction.created" {
				created++
			}
		}
		require.Equal(t, 20, created)
		require.Equal(t, 20, e.total(""))
	})
}
