package orgapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// ===================================================================== auth

func TestAuthXAPIKeyAndBearerAreEquivalent(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		viaHeader := e.do(get, "/organisations", nil, nil)
		require.Equal(t, http.StatusOK, viaHeader.Status, "%s", viaHeader)
		viaBearer := e.doKey("", get, "/organisations", nil, hdr{"Authorization": "Bearer " + e.Key.Secret})
		require.Equal(t, http.StatusOK, viaBearer.Status, "%s", viaBearer)
		require.JSONEq(t, string(viaHeader.Body), string(viaBearer.Body))

		// Writes work with either header too.
		r := e.doKey("", post, e.listPath(), regexBody("via bearer"), hdr{"Authorization": "Bearer " + e.Key.Secret})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r)
		r = e.do(post, e.listPath(), regexBody("via X-API-Key"), nil)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r)
		require.Equal(t, 2, e.total(""))
	})
}

func TestAuthXAPIKeyWinsOverBearer(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := e.newTenant("Beta", 1, "beta-key")
		garbage := "aiu_" + strings.Repeat("x", 46)

		// A valid X-API-Key and a garbage Bearer: the X-API-Key is used.
		r := e.do(get, "/organisations", nil, hdr{"Authorization": "Bearer " + garbage})
		require.Equal(t, http.StatusOK, r.Status, "%s", r)

		// A garbage X-API-Key and a valid Bearer: the X-API-Key is used, and fails.
		r = e.doKey(garbage, get, "/organisations", nil, hdr{"Authorization": "Bearer " + e.Key.Secret})
		requireProblem(t, r, http.StatusUnauthorized)

		// Two valid keys of different organisations: X-API-Key decides the organisation.
		r = e.do(get, "/organisations", nil, hdr{"Authorization": "Bearer " + b.Key.Secret})
		orgs := decodeJSON[[]spec.Organisation](t, r)
		require.Equal(t, []spec.Organisation{{ID: e.Org.ID, Name: e.Org.Name}}, orgs)
		r = e.doKey(b.Key.Secret, get, "/organisations", nil, hdr{"Authorization": "Bearer " + e.Key.Secret})
		orgs = decodeJSON[[]spec.Organisation](t, r)
		require.Equal(t, []spec.Organisation{{ID: b.Org.ID, Name: b.Org.Name}}, orgs)

		// An Ingestion X-API-Key beside a valid API Bearer: the Ingestion key is used.
		ing := e.newKey(e.Org.ID, "telemetry", org.KeyTypeIngestion, nil)
		r = e.doKey(ing.Secret, get, "/organisations", nil, hdr{"Authorization": "Bearer " + e.Key.Secret})
		requireProblem(t, r, http.StatusForbidden)
	})
}

func TestAuthRejectedKeysGetOneIdentical401(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		revoked := e.newKey(e.Org.ID, "to-revoke", org.KeyTypeAPI, nil)
		expiry := e.clock.Now().Add(time.Hour)
		expiring := e.newKey(e.Org.ID, "to-expire", org.KeyTypeAPI, &expiry)
		// Both work first.
		for _, k := range []org.CreatedKey{revoked, expiring} {
			r := e.doKey(k.Secret, get, "/organisations", nil, nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r)
		}

		// Revocation has effect on the next request: no cache.
		_, err := e.store.RevokeKey(t.Context(), e.Org.ID, revoked.ID, adminActor)
		require.NoError(t, err)
		// Expiry: move the clock past ExpiresAt.
		e.clock.Advance(time.Hour + time.Millisecond)
		// The main key has no expiry and still works.
		r := e.do(get, "/organisations", nil, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)

		mistyped := []byte(e.Key.Secret)
		if mistyped[len(mistyped)-1] == 'a' {
			mistyped[len(mistyped)-1] = 'b'
		} else {
			mistyped[len(mistyped)-1] = 'a'
		}
		cases := []struct {
			name   string
			secret string
			h      hdr
		}{
			{"missing", "", nil},
			{"mistyped", string(mistyped), nil},
			{"garbage", "not-a-key", nil},
			{"mistyped bearer", "", hdr{"Authorization": "Bearer " + string(mistyped)}},
			{"bearer without token", "", hdr{"Authorization": "Bearer"}},
			{"other scheme", "", hdr{"Authorization": "Basic " + e.Key.Secret}},
			{"revoked", revoked.Secret, nil},
			{"revoked bearer", "", hdr{"Authorization": "Bearer " + revoked.Secret}},
			{"expired", expiring.Secret, nil},
			{"expired bearer", "", hdr{"Authorization": "Bearer " + expiring.Secret}},
		}
		endpoints := []struct{ name, method, path string }{
			{"list organisations", get, "/organisations"},
			{"list instructions", get, e.listPath()},
			{"create instruction", post, e.listPath()},
			{"list agents", get, e.agentsPath()},
			{"get instruction", get, e.itemPath(uuid.NewString())},
		}
		before := e.state()
		var first []byte
		for _, ep := range endpoints {
			t.Run(ep.name, func(t *testing.T) {
				for _, c := range cases {
					t.Run(c.name, func(t *testing.T) {
						e := e.withT(t)
						var body any
						if ep.method == post {
							body = regexBody("must not be created")
						}
						r := e.doKey(c.secret, ep.method, ep.path, body, c.h)
						requireProblem(t, r, http.StatusUnauthorized)
						require.True(t, strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer"),
							"%s %s: WWW-Authenticate %q", c.name, ep.path, r.Header.Get("WWW-Authenticate"))
						if first == nil {
							first = r.Body
						}
						require.Equal(t, string(first), string(r.Body), "%s on %s %s: the 401 body differs", c.name, ep.method, ep.path)
					})
				}
			})
		}
		e.requireUnchanged(before)

		// The store names a known key beside the error (for the rate-limit
		// headers of the review-task API), and nothing of an unknown one.
		for _, k := range []org.CreatedKey{revoked, expiring} {
			p, err := e.store.Authenticate(t.Context(), k.Secret)
			require.ErrorIs(t, err, spec.ErrUnauthorized, k.Name)
			require.Equal(t, org.Principal{KeyID: k.ID, KeyName: k.Name, OrganisationID: e.Org.ID}, p, k.Name)
		}
		p, err := e.store.Authenticate(t.Context(), string(mistyped))
		require.ErrorIs(t, err, spec.ErrUnauthorized)
		require.Zero(t, p)
	})
}

func TestAuthDefaultExpiryIsOneYear(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		exp := org.DefaultExpiry(e.clock.Now())
		require.Equal(t, e.clock.Now().AddDate(1, 0, 0), exp)
		k := e.newKey(e.Org.ID, "default-expiry", org.KeyTypeAPI, &exp)
		e.clock.Advance(364 * 24 * time.Hour)
		r := e.doKey(k.Secret, get, "/organisations", nil, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		e.clock.Advance(2 * 24 * time.Hour)
		r = e.doKey(k.Secret, get, "/organisations", nil, nil)
		requireProblem(t, r, http.StatusUnauthorized)
	})
}

func TestAuthIngestionKeyIsForbiddenEverywhere(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		ing := e.newKey(e.Org.ID, "telemetry", org.KeyTypeIngestion, nil)
		// A key created without a type is an Ingestion key.
		def := e.newKey(e.Org.ID, "untyped", "", nil)
		require.Equal(t, org.KeyTypeIngestion, def.Type)

		in := e.create(regexBody("existing"))
		before := e.state()
		beforeItem := e.getRaw(in.ID)
		endpoints := []struct {
			name, method, path string
			body               any
		}{
			{"list organisations", get, "/organisations", nil},
			{"list instructions", get, e.listPath(), nil},
			{"create instruction", post, e.listPath(), regexBody("by ingestion key")},
			{"get instruction", get, e.itemPath(in.ID), nil},
			{"patch instruction", patch, e.itemPath(in.ID), jsonObj{"title": "changed by ingestion key"}},
			{"delete instruction", del, e.itemPath(in.ID), nil},
			{"list agents", get, e.agentsPath(), nil},
			{"list api-keys", get, e.orgPath() + "/api-keys", nil},
			{"create api-key", post, e.orgPath() + "/api-keys", jsonObj{"name": "x", "type": "API"}},
		}
		for _, k := range []org.CreatedKey{ing, def} {
			t.Run(k.Name, func(t *testing.T) {
				for _, ep := range endpoints {
					t.Run(ep.name, func(t *testing.T) {
						e := e.withT(t)
						r := e.doKey(k.Secret, ep.method, ep.path, ep.body, nil)
						requireProblem(t, r, http.StatusForbidden)
						r = e.doKey("", ep.method, ep.path, ep.body, hdr{"Authorization": "Bearer " + k.Secret})
						requireProblem(t, r, http.StatusForbidden)
					})
				}
			})
		}
		e.requireUnchanged(before)
		require.JSONEq(t, beforeItem, e.getRaw(in.ID))
	})
}

func TestAuthAPIKeysEndpointIsForbidden(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		keysBefore, err := e.store.Keys(t.Context(), e.Org.ID)
		require.NoError(t, err)
		auditBefore := len(e.audit(e.Org.ID))
		paths := []struct{ name, path string }{
			{"api-keys", e.orgPath() + "/api-keys"},
			{"api-keys item", e.orgPath() + "/api-keys/" + e.Key.ID},
		}
		for _, p := range paths {
			for _, m := range []string{get, post, http.MethodPut, patch, del} {
				t.Run(m+" "+p.name, func(t *testing.T) {
					e := e.withT(t)
					var body any
					if m != get && m != del {
						body = jsonObj{"name": "made by a key", "type": "API"}
					}
					r := e.do(m, p.path, body, nil)
					requireProblem(t, r, http.StatusForbidden)
					r = e.doKey("", m, p.path, body, hdr{"Authorization": "Bearer " + e.Key.Secret})
					requireProblem(t, r, http.StatusForbidden)
				})
			}
		}
		keysAfter, err := e.store.Keys(t.Context(), e.Org.ID)
		require.NoError(t, err)
		require.Equal(t, keysBefore, keysAfter)
		require.Len(t, e.audit(e.Org.ID), auditBefore)
		// The key was not revoked by the DELETE either.
		r := e.do(get, "/organisations", nil, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
	})
}

func TestAuthKeysStoredOnlyAsHashes(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		second := e.newKey(e.Org.ID, "second", org.KeyTypeAPI, nil)
		secretSyntax := regexp.MustCompile(`^aiu_[0-9A-Za-z]{46}$`)
		for _, k := range []org.CreatedKey{e.Key, second} {
			require.True(t, strings.HasPrefix(k.Secret, "aiu_"), k.Secret)
			require.Len(t, k.Secret, 50)
			require.Regexp(t, secretSyntax, k.Secret)
		}
		require.NotEqual(t, e.Key.Secret, second.Secret)

		keys, err := e.store.Keys(t.Context(), e.Org.ID)
		require.NoError(t, err)
		require.Len(t, keys, 2)
		byID := map[string]org.APIKey{}
		for _, k := range keys {
			byID[k.ID] = k
		}
		for _, k := range []org.CreatedKey{e.Key, second} {
			got, ok := byID[k.ID]
			require.True(t, ok, "key %s not listed", k.ID)
			require.Equal(t, k.Secret[len(k.Secret)-4:], got.Last4)
			require.Equal(t, k.Name, got.Name)
			listing, err := json.Marshal(got)
			require.NoError(t, err)
			require.NotContains(t, string(listing), k.Secret[4:])
		}

		// No column of any table holds a secret, or most of one.
		for _, table := range []string{"orgapi_api_keys", "orgapi_audit", "orgapi_organisations", "orgapi_agents"} {
			rows, err := db.QueryContext(t.Context(), "SELECT * FROM "+table)
			require.NoError(t, err)
			cols, err := rows.Columns()
			require.NoError(t, err)
			n := 0
			for rows.Next() {
				n++
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				require.NoError(t, rows.Scan(ptrs...))
				for i, v := range vals {
					var b []byte
					switch v := v.(type) {
					case []byte:
						b = v
					case string:
						b = []byte(v)
					default:
						b = fmt.Append(nil, v)
					}
					for _, k := range []org.CreatedKey{e.Key, second} {
						require.False(t, bytes.Contains(b, []byte(k.Secret[4:30])),
							"%s.%s holds the secret of key %s", table, cols[i], k.Name)
						require.False(t, bytes.Contains(b, []byte(k.Secret[24:])),
							"%s.%s holds the secret of key %s", table, cols[i], k.Name)
					}
				}
			}
			require.NoError(t, rows.Err())
			require.NoError(t, rows.Close())
			if table == "orgapi_api_keys" {
				require.Equal(t, 2, n)
			}
		}
		// The keys still authenticate, so the hash is what is kept.
		for _, k := range []org.CreatedKey{e.Key, second} {
			p, err := e.store.Authenticate(t.Context(), k.Secret)
			require.NoError(t, err)
			require.Equal(t, k.ID, p.KeyID)
		}
	})
}

// Rotation: the replacement key works beside the old one, and after the old
// one is revoked only the replacement works.
func TestAuthKeyRotation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		repl := e.newKey(e.Org.ID, "ci-bot-2", org.KeyTypeAPI, nil)
		for _, k := range []string{e.Key.Secret, repl.Secret} {
			r := e.doKey(k, get, e.listPath(), nil, nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r)
		}
		_, err := e.store.RevokeKey(t.Context(), e.Org.ID, e.Key.ID, adminActor)
		require.NoError(t, err)
		requireProblem(t, e.doKey(e.Key.Secret, get, e.listPath(), nil, nil), http.StatusUnauthorized)
		r := e.doKey(repl.Secret, post, e.listPath(), regexBody("after rotation"), nil)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r)
		// Revocation cannot be undone: revoking again leaves it revoked.
		k, err := e.store.RevokeKey(t.Context(), e.Org.ID, e.Key.ID, adminActor)
		require.NoError(t, err)
		require.NotNil(t, k.RevokedAt)
		requireProblem(t, e.doKey(e.Key.Secret, get, e.listPath(), nil, nil), http.StatusUnauthorized)
	})
}

// ============================================================ organisations

func TestOrganisationsListsOnlyTheKeysOwn(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := e.newTenant("Beta", 1, "beta-key")
		e.newTenant("Gamma", 2, "gamma-key")
		for _, tn := range []tenant{e.tenant, b} {
			for range 2 { // the id is stable
				r := e.doKey(tn.Key.Secret, get, "/organisations", nil, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r)
				arr := decodeJSON[[]map[string]any](t, r)
				require.Len(t, arr, 1, "%s", r)
				require.Equal(t, []string{"id", "name"}, keysOf(arr[0]), "%s", r)
				require.Equal(t, tn.Org.ID, arr[0]["id"])
				require.Equal(t, tn.Org.Name, arr[0]["name"])
			}
		}
	})
}

// ================================================================ isolation

func TestIsolationBetweenOrganisations(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		a := newTestEnv(t, db)
		bt := a.newTenant("Beta", 2, "beta-key")
		b := a.withT(t)
		b.tenant = bt

		aIn := a.create(func() jsonObj { x := regexBody("shared title"); x["usedBy"] = []string{a.Agents[0].ID}; return x }())
		bBody := regexBody("shared title")
		bBody["usedBy"] = []string{bt.Agents[0].ID}
		bBody["assessmentId"] = "asmt-b"
		bIn := b.create(bBody)
		bItem := b.getRaw(bIn.ID)
		bState := b.state()
		aState := a.state()

		// B's organisation id in A's requests: 404, never 403.
		for _, c := range []struct {
			name, method, path string
			body               any
		}{
			{"list B's instructions", get, bt.listPath(), nil},
			{"create in B", post, bt.listPath(), regexBody("into B")},
			{"list B's agents", get, bt.agentsPath(), nil},
			{"get B's instruction", get, bt.itemPath(bIn.ID), nil},
			{"patch B's instruction", patch, bt.itemPath(bIn.ID), jsonObj{"title": "changed by A"}},
			{"delete B's instruction", del, bt.itemPath(bIn.ID), nil},
			{"list B's api-keys", get, bt.orgPath() + "/api-keys", nil},
			// Another organisation's record under A's own path.
			{"get B's instruction under A", get, a.itemPath(bIn.ID), nil},
			{"patch B's instruction under A", patch, a.itemPath(bIn.ID), jsonObj{"title": "changed by A"}},
			{"delete B's instruction under A", del, a.itemPath(bIn.ID), nil},
			// An organisation that does not exist, and a malformed id.
			{"unknown organisation's instructions", get, "/organisations/" + uuid.NewString() + "/instructions", nil},
			{"malformed organisation id", get, "/organisations/not-an-id/instructions", nil},
			{"unknown organisation's agents", get, "/organisations/" + uuid.NewString() + "/agents", nil},
		} {
			t.Run(c.name, func(t *testing.T) {
				a := a.withT(t)
				r := a.do(c.method, c.path, c.body, nil)
				requireProblem(t, r, http.StatusNotFound)
			})
		}
		require.JSONEq(t, bItem, b.getRaw(bIn.ID), "B's instruction changed")

		// A's list never holds B's instruction, even when searching for it.
		for _, c := range []struct{ name, q string }{
			{"no filter", ""},
			{"search", "search=shared"},
			{"B's agentId", "agentId=" + bt.Agents[0].ID},
			{"pageSize=100", "pageSize=100"},
		} {
			t.Run(c.name, func(t *testing.T) {
				a := a.withT(t)
				l := a.list(c.q)
				require.NotContains(t, ids(l.Items), bIn.ID, c.q)
			})
		}
		require.Equal(t, 1, a.total(""))
		require.Equal(t, 0, a.total("agentId="+bt.Agents[0].ID))

		// B's agent in A's usedBy: 400 naming usedBy, on create and on patch.
		body := regexBody("uses B's agent")
		body["usedBy"] = []string{bt.Agents[0].ID}
		requireProblem(t, a.do(post, a.listPath(), body, nil), http.StatusBadRequest, "usedBy")
		requireProblem(t, a.do(patch, a.itemPath(aIn.ID), jsonObj{"usedBy": []string{bt.Agents[1].ID}}, nil), http.StatusBadRequest, "usedBy")

		// A's agents endpoint lists only A's agents.
		counts := a.counts()
		require.Len(t, counts, len(a.Agents))
		for _, ag := range bt.Agents {
			require.NotContains(t, counts, ag.ID)
		}

		a.requireUnchanged(aState)
		b.requireUnchanged(bState)
		require.JSONEq(t, bItem, b.getRaw(bIn.ID))

		// Existence in B cannot be probed: B's ids get the answer a random id
		// gets, but for the id itself.
		ghost := uuid.NewString()
		same := func(r1, r2 response, id1, id2 string) {
			t.Helper()
			require.Equal(t, r2.Status, r1.Status, "%s\n%s", r1, r2)
			require.Equal(t, strings.ReplaceAll(string(r2.Body), id2, "ID"), strings.ReplaceAll(string(r1.Body), id1, "ID"))
		}
		for _, m := range []string{get, patch, del} {
			var body any
			if m == patch {
				body = jsonObj{"title": "x"}
			}
			same(a.do(m, a.itemPath(bIn.ID), body, nil), a.do(m, a.itemPath(ghost), body, nil), bIn.ID, ghost)
		}
		same(a.do(get, bt.listPath(), nil, nil), a.do(get, "/organisations/"+ghost+"/instructions", nil, nil), bt.Org.ID, ghost)
		// Even a full agent of B is "not the organisation's" in A, like a random id.
		b.fill(bt.Agents[1].ID, spec.MaxInstructionsPerAgent)
		same(a.do(post, a.listPath(), with(regexBody("x"), "usedBy", []string{bt.Agents[1].ID}), nil),
			a.do(post, a.listPath(), with(regexBody("x"), "usedBy", []string{ghost}), nil), bt.Agents[1].ID, ghost)
		a.requireUnchanged(aState)

		// B's assessmentId is free in A.
		withAsmt := regexBody("same assessment")
		withAsmt["assessmentId"] = "asmt-b"
		a.create(withAsmt)
	})
}
