package orgapi_test

import (
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// lastSeq is the Seq of the last record of an audit trail, 0 when empty.
func lastSeq(recs []org.AuditRecord) int64 {
	if len(recs) == 0 {
		return 0
	}
	return recs[len(recs)-1].Seq
}

func TestAuditTrailRecordsChangesMadeWithAKey(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		require.Equal(t, "ci-bot", e.Key.Name)
		base := lastSeq(e.audit(e.Org.ID))

		createdAt := e.clock.Now()
		r := e.do(post, e.listPath(), with(regexBody("audited"), "usedBy", []string{e.Agents[0].ID}), nil)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r)
		created := r.Body
		id := decodeJSON[spec.Instruction](t, r).ID

		e.clock.Advance(time.Second)
		updatedAt := e.clock.Now()
		r = e.do(patch, e.itemPath(id), jsonObj{"title": "audited, patched", "criticality": "High"}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		patched := r.Body

		e.clock.Advance(time.Second)
		deletedAt := e.clock.Now()
		r = e.do(del, e.itemPath(id), nil, nil)
		require.Equal(t, http.StatusNoContent, r.Status, "%s", r)

		recs, err := e.store.Audit(t.Context(), e.Org.ID, 0, 100)
		require.NoError(t, err)
		var mine []org.AuditRecord
		for _, rec := range recs {
			if rec.Seq > base {
				mine = append(mine, rec)
			}
		}
		require.Len(t, mine, 3)
		want := []struct {
			action        string
			at            time.Time
			before, after string
		}{
			{org.AuditInstructionCreated, createdAt, "null", string(created)},
			{org.AuditInstructionUpdated, updatedAt, string(created), string(patched)},
			{org.AuditInstructionDeleted, deletedAt, string(patched), "null"},
		}
		for i, rec := range mine {
			w := want[i]
			require.Equal(t, org.Actor{Type: "apiKey", ID: e.Key.ID, Name: "ci-bot"}, rec.Actor, "record %d", i)
			require.Equal(t, w.action, rec.Action, "record %d", i)
			require.Equal(t, e.Org.ID, rec.OrganisationID, "record %d", i)
			require.Equal(t, "instruction", rec.ResourceType, "record %d", i)
			require.Equal(t, id, rec.ResourceID, "record %d", i)
			require.True(t, w.at.Equal(rec.At.Time), "record %d: at %s, want %s", i, rec.At, w.at)
			require.JSONEq(t, w.before, string(rec.Before), "record %d: before", i)
			require.JSONEq(t, w.after, string(rec.After), "record %d: after", i)
			if i > 0 {
				require.Greater(t, rec.Seq, mine[i-1].Seq)
			}
		}
		// The records are read in pages after a Seq.
		page, err := e.store.Audit(t.Context(), e.Org.ID, mine[0].Seq, 1)
		require.NoError(t, err)
		require.Equal(t, []org.AuditRecord{mine[1]}, page)
	})
}

func TestAuditAttributesChangesToTheKeyUsed(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		deploy := e.newKey(e.Org.ID, "deploy-bot", org.KeyTypeAPI, nil)
		base := lastSeq(e.audit(e.Org.ID))

		in := e.create(regexBody("by ci-bot"))
		r := e.doKey(deploy.Secret, patch, e.itemPath(in.ID), jsonObj{"title": "by deploy-bot"}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		// With Authorization: Bearer, and with both headers (X-API-Key wins).
		r = e.doKey("", patch, e.itemPath(in.ID), jsonObj{"title": "by deploy-bot, bearer"}, hdr{"Authorization": "Bearer " + deploy.Secret})
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		r = e.do(patch, e.itemPath(in.ID), jsonObj{"title": "by ci-bot, both headers"}, hdr{"Authorization": "Bearer " + deploy.Secret})
		require.Equal(t, http.StatusOK, r.Status, "%s", r)

		var actors []org.Actor
		for _, rec := range e.audit(e.Org.ID) {
			if rec.Seq > base {
				actors = append(actors, rec.Actor)
			}
		}
		ci := org.Actor{Type: org.ActorAPIKey, ID: e.Key.ID, Name: "ci-bot"}
		dep := org.Actor{Type: org.ActorAPIKey, ID: deploy.ID, Name: "deploy-bot"}
		require.Equal(t, []org.Actor{ci, dep, dep, ci}, actors)
	})
}

func TestAuditFailedRequestsAddNoRecord(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		bt := e.newTenant("Beta", 1, "beta-key")
		full, _ := fullAgent(e)
		in := e.create(with(regexBody("existing"), "assessmentId", "asmt-1"))
		bIn := e.withT(t)
		bIn.tenant = bt
		bInstr := bIn.create(regexBody("B's"))
		revoked := e.newKey(e.Org.ID, "revoked", org.KeyTypeAPI, nil)
		_, err := e.store.RevokeKey(t.Context(), e.Org.ID, revoked.ID, adminActor)
		require.NoError(t, err)
		ing := e.newKey(e.Org.ID, "telemetry", org.KeyTypeIngestion, nil)

		e.clock.Advance(time.Minute)
		aBefore := len(e.audit(e.Org.ID))
		bBefore := len(e.audit(bt.Org.ID))

		for _, c := range []struct {
			name         string
			secret       string
			method, path string
			body         any
			status       int
		}{
			{"create malformed", e.Key.Secret, post, e.listPath(), `{"title":`, 400},
			{"create bad agentType", e.Key.Secret, post, e.listPath(), with(regexBody("x"), "agentType", "Other"), 400},
			{"create unknown agent", e.Key.Secret, post, e.listPath(), with(regexBody("x"), "usedBy", []string{uuid.NewString()}), 400},
			{"create on a full agent", e.Key.Secret, post, e.listPath(), with(regexBody("x"), "usedBy", []string{full.ID}), 409},
			{"create taken assessmentId", e.Key.Secret, post, e.listPath(), with(regexBody("x"), "assessmentId", "asmt-1"), 409},
			{"create long title", e.Key.Secret, post, e.listPath(), regexBody(strings.Repeat("x", 201)), 400},
			{"create too large", e.Key.Secret, post, e.listPath(), append([]byte(`{"title":"`), make([]byte, httpx.MaxBodyBytes)...), 413},
			{"patch onto a full agent", e.Key.Secret, patch, e.itemPath(in.ID), jsonObj{"usedBy": []string{full.ID}}, 409},
			{"patch null title", e.Key.Secret, patch, e.itemPath(in.ID), jsonObj{"title": nil}, 400},
			{"patch redacting Semantic", e.Key.Secret, patch, e.itemPath(in.ID), jsonObj{"allowRedaction": true, "trigger": jsonObj{"type": "Semantic", "text": "x"}}, 400},
			{"patch empty", e.Key.Secret, patch, e.itemPath(in.ID), jsonObj{}, 200}, // changes nothing
			{"patch B's instruction", e.Key.Secret, patch, e.itemPath(bInstr.ID), jsonObj{"title": "x"}, 404},
			{"delete B's instruction", e.Key.Secret, del, e.itemPath(bInstr.ID), nil, 404},
			{"delete under B's path", e.Key.Secret, del, bt.itemPath(bInstr.ID), nil, 404},
			{"delete unknown", e.Key.Secret, del, e.itemPath(uuid.NewString()), nil, 404},
			{"PUT", e.Key.Secret, http.MethodPut, e.itemPath(in.ID), regexBody("x"), 405},
			{"create api-key", e.Key.Secret, post, e.orgPath() + "/api-keys", jsonObj{"name": "x"}, 403},
			{"create with a revoked key", revoked.Secret, post, e.listPath(), regexBody("x"), 401},
			{"delete with a revoked key", revoked.Secret, del, e.itemPath(in.ID), nil, 401},
			{"create with an Ingestion key", ing.Secret, post, e.listPath(), regexBody("x"), 403},
			{"delete with an Ingestion key", ing.Secret, del, e.itemPath(in.ID), nil, 403},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := e.withT(t)
				r := e.doKey(c.secret, c.method, c.path, c.body, nil)
				require.Equal(t, c.status, r.Status, "%s", r)
			})
		}
		require.Len(t, e.audit(e.Org.ID), aBefore, "a failed request added an audit record")
		require.Len(t, e.audit(bt.Org.ID), bBefore, "a failed request added an audit record to another organisation")
	})
}

func TestAuditTrailIsPerOrganisation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		bt := e.newTenant("Beta", 1, "beta-key")
		b := e.withT(t)
		b.tenant = bt

		aIn := e.create(regexBody("A's"))
		r := e.do(patch, e.itemPath(aIn.ID), jsonObj{"title": "A's, patched"}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		bIn := b.create(regexBody("B's"))
		r = b.do(del, b.itemPath(bIn.ID), nil, nil)
		require.Equal(t, http.StatusNoContent, r.Status, "%s", r)
		e.create(regexBody("A's second"))

		check := func(recs []org.AuditRecord, own tenant, ownIn string, other tenant, otherIn string, wantOwn int) {
			t.Helper()
			n := 0
			for _, rec := range recs {
				require.Equal(t, own.Org.ID, rec.OrganisationID)
				require.NotEqual(t, otherIn, rec.ResourceID)
				require.NotEqual(t, other.Key.ID, rec.Actor.ID)
				require.NotContains(t, string(rec.Before)+string(rec.After), otherIn)
				if rec.Actor.Type == org.ActorAPIKey {
					require.Equal(t, own.Key.ID, rec.Actor.ID)
					n++
				}
			}
			require.Equal(t, wantOwn, n)
		}
		check(e.audit(e.Org.ID), e.tenant, aIn.ID, bt, bIn.ID, 3)
		check(e.audit(bt.Org.ID), bt, bIn.ID, e.tenant, aIn.ID, 2)
		recs, err := e.store.Audit(t.Context(), uuid.NewString(), 0, 100)
		require.NoError(t, err)
		require.Empty(t, recs)
	})
}

func TestRecordAuditAppendsToTheTrail(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		base := lastSeq(e.audit(e.Org.ID))
		user := org.Actor{Type: org.ActorUser, ID: uuid.NewString(), Name: "Alice"}
		resID := uuid.NewString()

		// In a transaction of its own, at the store's clock, with the
		// organisation's id in any case.
		require.NoError(t, e.store.RecordAudit(t.Context(), strings.ToUpper(e.Org.ID), user, "user.created", "user", resID,
			nil, map[string]string{"name": "Bob"}))
		// Within the caller's transaction, at the time given: rolled back
		// with it, or committed with it.
		at := e.clock.Now().Add(time.Minute)
		rollback := errors.New("rolled back")
		err := db.InTx(t.Context(), func(tx *sql.Tx) error {
			require.NoError(t, e.store.RecordAuditTx(t.Context(), tx, e.Org.ID, at, user, "user.disabled", "user", resID, nil, nil))
			return rollback
		})
		require.ErrorIs(t, err, rollback)
		require.NoError(t, db.InTx(t.Context(), func(tx *sql.Tx) error {
			return e.store.RecordAuditTx(t.Context(), tx, e.Org.ID, at, user, "user.role_changed", "user", resID,
				map[string]string{"role": "Reviewer"}, map[string]string{"role": "Administrator"})
		}))

		recs, err := e.store.Audit(t.Context(), e.Org.ID, base, 100)
		require.NoError(t, err)
		require.Len(t, recs, 2)
		require.Equal(t, org.AuditRecord{Seq: base + 1, OrganisationID: e.Org.ID, At: spec.NewTime(e.clock.Now()), Actor: user,
			Action: "user.created", ResourceType: "user", ResourceID: resID,
			Before: json.RawMessage("null"), After: json.RawMessage(`{"name":"Bob"}`)}, recs[0])
		require.Equal(t, base+2, recs[1].Seq, "the rolled-back record took no number")
		require.Equal(t, "user.role_changed", recs[1].Action)
		require.True(t, at.Equal(recs[1].At.Time))
		require.JSONEq(t, `{"role":"Reviewer"}`, string(recs[1].Before))

		// An organisation that does not exist has no trail to append to.
		require.Error(t, e.store.RecordAudit(t.Context(), uuid.NewString(), user, "user.created", "user", resID, nil, nil))
	})
}
