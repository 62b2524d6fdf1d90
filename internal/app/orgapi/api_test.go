package orgapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/orgapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

const (
	get   = http.MethodGet
	post  = http.MethodPost
	patch = http.MethodPatch
	del   = http.MethodDelete
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
		ing := e.newKey(e.Org.ID, "telemetry", orgapi.KeyTypeIngestion, nil)
		r = e.doKey(ing.Secret, get, "/organisations", nil, hdr{"Authorization": "Bearer " + e.Key.Secret})
		requireProblem(t, r, http.StatusForbidden)
	})
}

func TestAuthRejectedKeysGetOneIdentical401(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		revoked := e.newKey(e.Org.ID, "to-revoke", orgapi.KeyTypeAPI, nil)
		expiry := e.clock.Now().Add(time.Hour)
		expiring := e.newKey(e.Org.ID, "to-expire", orgapi.KeyTypeAPI, &expiry)
		// Both work first.
		for _, k := range []orgapi.CreatedKey{revoked, expiring} {
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
		endpoints := []struct{ method, path string }{
			{get, "/organisations"},
			{get, e.listPath()},
			{post, e.listPath()},
			{get, e.agentsPath()},
			{get, e.itemPath(uuid.NewString())},
		}
		before := e.state()
		var first []byte
		for _, ep := range endpoints {
			for _, c := range cases {
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
			}
		}
		e.requireUnchanged(before)
	})
}

func TestAuthDefaultExpiryIsOneYear(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		exp := orgapi.DefaultExpiry(e.clock.Now())
		require.Equal(t, e.clock.Now().AddDate(1, 0, 0), exp)
		k := e.newKey(e.Org.ID, "default-expiry", orgapi.KeyTypeAPI, &exp)
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
		ing := e.newKey(e.Org.ID, "telemetry", orgapi.KeyTypeIngestion, nil)
		// A key created without a type is an Ingestion key.
		def := e.newKey(e.Org.ID, "untyped", "", nil)
		require.Equal(t, orgapi.KeyTypeIngestion, def.Type)

		in := e.create(regexBody("existing"))
		before := e.state()
		beforeItem := e.getRaw(in.ID)
		endpoints := []struct {
			method, path string
			body         any
		}{
			{get, "/organisations", nil},
			{get, e.listPath(), nil},
			{post, e.listPath(), regexBody("by ingestion key")},
			{get, e.itemPath(in.ID), nil},
			{patch, e.itemPath(in.ID), jsonObj{"title": "changed by ingestion key"}},
			{del, e.itemPath(in.ID), nil},
			{get, e.agentsPath(), nil},
			{get, e.orgPath() + "/api-keys", nil},
			{post, e.orgPath() + "/api-keys", jsonObj{"name": "x", "type": "API"}},
		}
		for _, k := range []orgapi.CreatedKey{ing, def} {
			for _, ep := range endpoints {
				r := e.doKey(k.Secret, ep.method, ep.path, ep.body, nil)
				requireProblem(t, r, http.StatusForbidden)
				r = e.doKey("", ep.method, ep.path, ep.body, hdr{"Authorization": "Bearer " + k.Secret})
				requireProblem(t, r, http.StatusForbidden)
			}
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
		paths := []string{e.orgPath() + "/api-keys", e.orgPath() + "/api-keys/" + e.Key.ID}
		for _, p := range paths {
			for _, m := range []string{get, post, http.MethodPut, patch, del} {
				var body any
				if m != get && m != del {
					body = jsonObj{"name": "made by a key", "type": "API"}
				}
				r := e.do(m, p, body, nil)
				requireProblem(t, r, http.StatusForbidden)
				r = e.doKey("", m, p, body, hdr{"Authorization": "Bearer " + e.Key.Secret})
				requireProblem(t, r, http.StatusForbidden)
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
		second := e.newKey(e.Org.ID, "second", orgapi.KeyTypeAPI, nil)
		secretSyntax := regexp.MustCompile(`^aiu_[0-9A-Za-z]{46}$`)
		for _, k := range []orgapi.CreatedKey{e.Key, second} {
			require.True(t, strings.HasPrefix(k.Secret, "aiu_"), k.Secret)
			require.Len(t, k.Secret, 50)
			require.Regexp(t, secretSyntax, k.Secret)
		}
		require.NotEqual(t, e.Key.Secret, second.Secret)

		keys, err := e.store.Keys(t.Context(), e.Org.ID)
		require.NoError(t, err)
		require.Len(t, keys, 2)
		byID := map[string]orgapi.APIKey{}
		for _, k := range keys {
			byID[k.ID] = k
		}
		for _, k := range []orgapi.CreatedKey{e.Key, second} {
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
					for _, k := range []orgapi.CreatedKey{e.Key, second} {
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
		for _, k := range []orgapi.CreatedKey{e.Key, second} {
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
		repl := e.newKey(e.Org.ID, "ci-bot-2", orgapi.KeyTypeAPI, nil)
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
			method, path string
			body         any
		}{
			{get, bt.listPath(), nil},
			{post, bt.listPath(), regexBody("into B")},
			{get, bt.agentsPath(), nil},
			{get, bt.itemPath(bIn.ID), nil},
			{patch, bt.itemPath(bIn.ID), jsonObj{"title": "changed by A"}},
			{del, bt.itemPath(bIn.ID), nil},
			{get, bt.orgPath() + "/api-keys", nil},
			// Another organisation's record under A's own path.
			{get, a.itemPath(bIn.ID), nil},
			{patch, a.itemPath(bIn.ID), jsonObj{"title": "changed by A"}},
			{del, a.itemPath(bIn.ID), nil},
			// An organisation that does not exist, and a malformed id.
			{get, "/organisations/" + uuid.NewString() + "/instructions", nil},
			{get, "/organisations/not-an-id/instructions", nil},
			{get, "/organisations/" + uuid.NewString() + "/agents", nil},
		} {
			r := a.do(c.method, c.path, c.body, nil)
			requireProblem(t, r, http.StatusNotFound)
		}
		require.JSONEq(t, bItem, b.getRaw(bIn.ID), "B's instruction changed")

		// A's list never holds B's instruction, even when searching for it.
		for _, q := range []string{"", "search=shared", "agentId=" + bt.Agents[0].ID, "pageSize=100"} {
			l := a.list(q)
			require.NotContains(t, ids(l.Items), bIn.ID, q)
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

// =================================================================== create

func TestCreateAnswers201WithTheFullInstruction(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		e.clock.Advance(1234567 * time.Nanosecond) // not on a millisecond
		categoryID := uuid.NewString()
		body := jsonObj{
			"agentType":      "DataProtection",
			"title":          "Block IBANs in prompts",
			"trigger":        jsonObj{"type": "Regex", "pattern": `\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}\b`, "isCaseSensitive": false},
			"action":         "Block",
			"criticality":    "High",
			"categoryId":     categoryID,
			"usedBy":         []string{e.Agents[0].ID, e.Agents[1].ID},
			"allowRedaction": true,
			"assessmentId":   "asmt-2026-014",
		}
		r := e.do(post, e.listPath(), body, nil)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r)
		m := decodeJSON[map[string]any](t, r)
		require.Equal(t, []string{"action", "agentType", "allowRedaction", "assessmentId", "categoryId", "createdAt",
			"criticality", "id", "title", "trigger", "updatedAt", "usedBy"}, keysOf(m))

		id, _ := m["id"].(string)
		parsed, err := uuid.Parse(id)
		require.NoError(t, err, "id %q", id)
		require.Equal(t, parsed.String(), id, "id is not a canonical UUID")

		created, _ := m["createdAt"].(string)
		updated, _ := m["updatedAt"].(string)
		require.NoError(t, spec.CheckTimestampMillis(created))
		require.NoError(t, spec.CheckTimestampMillis(updated))
		require.Equal(t, created, updated)
		require.Equal(t, "2026-03-02T09:14:03.121Z", created)

		require.Equal(t, "DataProtection", m["agentType"])
		require.Equal(t, "Block IBANs in prompts", m["title"])
		require.Equal(t, map[string]any{"type": "Regex", "pattern": body["trigger"].(jsonObj)["pattern"], "isCaseSensitive": false}, m["trigger"])
		require.Equal(t, "Block", m["action"])
		require.Equal(t, "High", m["criticality"])
		require.Equal(t, categoryID, m["categoryId"])
		require.Equal(t, []any{e.Agents[0].ID, e.Agents[1].ID}, m["usedBy"])
		require.Equal(t, true, m["allowRedaction"])
		require.Equal(t, "asmt-2026-014", m["assessmentId"])

		loc := r.Header.Get("Location")
		require.NotEmpty(t, loc)
		u, err := url.Parse(loc)
		require.NoError(t, err)
		require.Equal(t, e.itemPath(id), u.Path)
		g := e.do(get, u.Path, nil, nil)
		require.Equal(t, http.StatusOK, g.Status, "%s", g)
		require.JSONEq(t, string(r.Body), string(g.Body))
	})
}

func TestCreateDefaults(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		for _, body := range []jsonObj{regexBody("regex"), stringMatchBody("values", "a", "b"), semanticBody("semantic", "text")} {
			r := e.do(post, e.listPath(), body, nil)
			require.Equal(t, http.StatusCreated, r.Status, "%s", r)
			m := decodeJSON[map[string]any](t, r)
			require.Equal(t, []any{}, m["usedBy"], "usedBy must be [] not null: %s", r.Body)
			require.Equal(t, false, m["allowRedaction"])
			v, ok := m["categoryId"]
			require.True(t, ok, "categoryId missing: %s", r.Body)
			require.Nil(t, v)
			v, ok = m["assessmentId"]
			require.True(t, ok, "assessmentId missing: %s", r.Body)
			require.Nil(t, v)
			tr := m["trigger"].(map[string]any)
			if tr["type"] != "Semantic" {
				require.Equal(t, true, tr["isCaseSensitive"], "isCaseSensitive defaults to true: %s", r.Body)
			}
			// GET serves the same defaults.
			require.JSONEq(t, string(r.Body), e.getRaw(m["id"].(string)))
		}
		// false is kept.
		for _, body := range []jsonObj{regexBody("regex"), stringMatchBody("values", "a")} {
			body["trigger"].(jsonObj)["isCaseSensitive"] = false
			in := e.create(body)
			require.NotNil(t, in.Trigger.IsCaseSensitive)
			require.False(t, *in.Trigger.IsCaseSensitive)
			require.False(t, e.get(in.ID).Trigger.CaseSensitive())
		}
	})
}

// badCreate is a create body the service must reject with status, blaming
// field ("" when no field is to blame).
type badCreate struct {
	name   string
	body   any
	status int
	field  string
}

// requireRejected sends every case to POST and asserts its rejection, and
// that nothing was written.
func requireRejectedCreates(e *testEnv, cases []badCreate) {
	e.t.Helper()
	before := e.state()
	for _, c := range cases {
		r := e.do(post, e.listPath(), c.body, nil)
		if r.Status != c.status {
			e.t.Errorf("%s: got %s, want %d", c.name, r, c.status)
			continue
		}
		p := problem(e.t, r)
		if c.field != "" && !slices.Contains(fieldsOf(p), c.field) {
			e.t.Errorf("%s: problem blames %v, want %q: %s", c.name, fieldsOf(p), c.field, r.Body)
		}
	}
	e.requireUnchanged(before)
}

func with(body jsonObj, key string, v any) jsonObj {
	out := jsonObj{}
	for k, x := range body {
		out[k] = x
	}
	out[key] = v
	return out
}

func without(body jsonObj, key string) jsonObj {
	out := jsonObj{}
	for k, x := range body {
		if k != key {
			out[k] = x
		}
	}
	return out
}

func withTrigger(body jsonObj, trigger jsonObj) jsonObj { return with(body, "trigger", trigger) }

func TestCreateAgentTypeMustBeDataProtection(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("agent type")
		requireRejectedCreates(e, []badCreate{
			{"Other", with(b, "agentType", "Other"), 400, "agentType"},
			{"lowercase", with(b, "agentType", "dataprotection"), 400, "agentType"},
			{"empty", with(b, "agentType", ""), 400, "agentType"},
			{"number", with(b, "agentType", 1), 400, "agentType"},
			{"null", with(b, "agentType", nil), 400, "agentType"},
			{"missing", without(b, "agentType"), 400, "agentType"},
		})
		e.create(b)
	})
}

func TestCreateTitleLength(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("")
		requireRejectedCreates(e, []badCreate{
			{"empty", with(b, "title", ""), 400, "title"},
			{"201 ascii", with(b, "title", strings.Repeat("a", 201)), 400, "title"},
			{"201 é", with(b, "title", strings.Repeat("é", 201)), 400, "title"},
			{"201 emoji", with(b, "title", strings.Repeat("😀", 201)), 400, "title"},
		})
		for _, title := range []string{"x", strings.Repeat("a", 200), strings.Repeat("é", 200), strings.Repeat("😀", 200)} {
			in := e.create(with(b, "title", title))
			require.Equal(t, title, in.Title)
			require.Equal(t, title, e.get(in.ID).Title)
		}
	})
}

func TestCreateRequiredFields(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("required")
		var cases []badCreate
		for _, f := range []string{"agentType", "title", "trigger", "action", "criticality"} {
			cases = append(cases, badCreate{"missing " + f, without(b, f), 400, f})
		}
		cases = append(cases,
			badCreate{"missing trigger.type", withTrigger(b, jsonObj{"pattern": "x"}), 400, "trigger.type"},
			badCreate{"empty object", jsonObj{}, 400, "title"},
		)
		requireRejectedCreates(e, cases)
	})
}

func TestCreateEnumValues(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("enums")
		requireRejectedCreates(e, []badCreate{
			{"action Deny", with(b, "action", "Deny"), 400, "action"},
			{"action lowercase", with(b, "action", "block"), 400, "action"},
			{"action empty", with(b, "action", ""), 400, "action"},
			{"criticality Medium", with(b, "criticality", "Medium"), 400, "criticality"},
			{"criticality lowercase", with(b, "criticality", "high"), 400, "criticality"},
			{"trigger type Fuzzy", withTrigger(b, jsonObj{"type": "Fuzzy", "text": "x"}), 400, "trigger.type"},
			{"trigger type lowercase", withTrigger(b, jsonObj{"type": "regex", "pattern": "x"}), 400, "trigger.type"},
		})
		for _, a := range []string{"Allow", "Block"} {
			for _, c := range []string{"Low", "High"} {
				in := e.create(with(with(b, "action", a), "criticality", c))
				require.Equal(t, a, in.Action)
				require.Equal(t, c, in.Criticality)
			}
		}
	})
}

func TestCreateTriggerUnion(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("trigger")
		requireRejectedCreates(e, []badCreate{
			{"Semantic without text", withTrigger(b, jsonObj{"type": "Semantic"}), 400, "trigger.text"},
			{"Regex without pattern", withTrigger(b, jsonObj{"type": "Regex"}), 400, "trigger.pattern"},
			{"StringMatch without values", withTrigger(b, jsonObj{"type": "StringMatch"}), 400, "trigger.values"},
			{"Semantic with pattern", withTrigger(b, jsonObj{"type": "Semantic", "text": "x", "pattern": "x"}), 400, "trigger.pattern"},
			{"Semantic with values", withTrigger(b, jsonObj{"type": "Semantic", "text": "x", "values": []string{"x"}}), 400, "trigger.values"},
			{"Semantic with isCaseSensitive", withTrigger(b, jsonObj{"type": "Semantic", "text": "x", "isCaseSensitive": true}), 400, "trigger.isCaseSensitive"},
			{"Regex with text", withTrigger(b, jsonObj{"type": "Regex", "pattern": "x", "text": "x"}), 400, "trigger.text"},
			{"Regex with values", withTrigger(b, jsonObj{"type": "Regex", "pattern": "x", "values": []string{"x"}}), 400, "trigger.values"},
			{"StringMatch with pattern", withTrigger(b, jsonObj{"type": "StringMatch", "values": []string{"x"}, "pattern": "x"}), 400, "trigger.pattern"},
			{"StringMatch with text", withTrigger(b, jsonObj{"type": "StringMatch", "values": []string{"x"}, "text": "x"}), 400, "trigger.text"},
			{"unknown trigger field", withTrigger(b, jsonObj{"type": "Regex", "pattern": "x", "flags": "i"}), 400, "trigger.flags"},
			{"empty text", withTrigger(b, jsonObj{"type": "Semantic", "text": ""}), 400, "trigger.text"},
			{"empty pattern", withTrigger(b, jsonObj{"type": "Regex", "pattern": ""}), 400, "trigger.pattern"},
			{"empty values", withTrigger(b, jsonObj{"type": "StringMatch", "values": []string{}}), 400, "trigger.values"},
			{"empty value", withTrigger(b, jsonObj{"type": "StringMatch", "values": []string{"a", ""}}), 400, "trigger.values"},
		})
		s := e.create(withTrigger(b, jsonObj{"type": "Semantic", "text": "by meaning"}))
		require.Equal(t, spec.Trigger{Type: "Semantic", Text: "by meaning"}, s.Trigger)
		m := e.create(withTrigger(b, jsonObj{"type": "StringMatch", "values": []string{"Aurora", "Borealis"}}))
		require.Equal(t, []string{"Aurora", "Borealis"}, m.Trigger.Values)
	})
}

func TestCreateInvalidRE2PatternIs400(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("regex")
		var cases []badCreate
		for _, p := range []string{`(?=x)`, `a(b`, `(?<!x)y`, `[z-a]`, `x**`, `\1`, `a{1001}`} {
			cases = append(cases, badCreate{"pattern " + p, withTrigger(b, jsonObj{"type": "Regex", "pattern": p}), 400, "trigger.pattern"})
			cases = append(cases, badCreate{"case-insensitive pattern " + p,
				withTrigger(b, jsonObj{"type": "Regex", "pattern": p, "isCaseSensitive": false}), 400, "trigger.pattern"})
		}
		requireRejectedCreates(e, cases)
		for _, p := range []string{`\bDE\d{20}\b`, `(?i)iban`, `[[:alpha:]]+`, `\p{Greek}`} {
			in := e.create(withTrigger(b, jsonObj{"type": "Regex", "pattern": p}))
			require.Equal(t, p, in.Trigger.Pattern)
		}
	})
}

func TestCreateTriggerLimits(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("limits")
		values := func(n int, v string) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = fmt.Sprintf("%s%04d", v, i)
			}
			return out
		}
		requireRejectedCreates(e, []badCreate{
			{"pattern 1001", withTrigger(b, jsonObj{"type": "Regex", "pattern": strings.Repeat("a", 1001)}), 400, "trigger.pattern"},
			{"pattern 1001 é", withTrigger(b, jsonObj{"type": "Regex", "pattern": strings.Repeat("é", 1001)}), 400, "trigger.pattern"},
			{"text 2001", withTrigger(b, jsonObj{"type": "Semantic", "text": strings.Repeat("t", 2001)}), 400, "trigger.text"},
			{"text 2001 é", withTrigger(b, jsonObj{"type": "Semantic", "text": strings.Repeat("é", 2001)}), 400, "trigger.text"},
			{"values 1001", withTrigger(b, jsonObj{"type": "StringMatch", "values": values(1001, "v")}), 400, "trigger.values"},
			{"value 201", withTrigger(b, jsonObj{"type": "StringMatch", "values": []string{"ok", strings.Repeat("v", 201)}}), 400, "trigger.values"},
			{"value 201 é", withTrigger(b, jsonObj{"type": "StringMatch", "values": []string{strings.Repeat("é", 201)}}), 400, "trigger.values"},
		})
		ok := []jsonObj{
			{"type": "Regex", "pattern": strings.Repeat("a", 1000)},
			{"type": "Regex", "pattern": strings.Repeat("é", 1000)},
			{"type": "Semantic", "text": strings.Repeat("t", 2000)},
			{"type": "Semantic", "text": strings.Repeat("é", 2000)},
			{"type": "StringMatch", "values": values(1000, "v")},
			{"type": "StringMatch", "values": []string{strings.Repeat("v", 200), strings.Repeat("é", 200)}},
		}
		for i, tr := range ok {
			r := e.do(post, e.listPath(), withTrigger(b, tr), nil)
			require.Equal(t, http.StatusCreated, r.Status, "trigger %d: %s", i, r)
			in := decodeJSON[spec.Instruction](t, r)
			got := e.get(in.ID)
			require.Equal(t, in, got)
			switch tr["type"] {
			case "Regex":
				require.Equal(t, tr["pattern"], got.Trigger.Pattern)
			case "Semantic":
				require.Equal(t, tr["text"], got.Trigger.Text)
			case "StringMatch":
				require.Equal(t, tr["values"], got.Trigger.Values)
			}
		}
	})
}

// randomText returns n random CJK characters (three bytes each in UTF-8),
// text that does not compress.
func randomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteRune(rune(0x4E00 + rng.IntN(0x5000)))
	}
	return b.String()
}

// Instructions at every limit at once, with text that does not compress, are
// stored, served and found by search like any other.
func TestCreateAtTheLimitsWithIncompressibleText(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		rng := rand.New(rand.NewPCG(7, 7))
		values := make([]string, spec.MaxStringMatchValues)
		for i := range values {
			values[i] = randomText(rng, spec.MaxStringMatchValue)
		}
		for _, tr := range []jsonObj{
			{"type": "StringMatch", "values": values},
			{"type": "Semantic", "text": randomText(rng, spec.MaxSemanticTextLength)},
			{"type": "Regex", "pattern": randomText(rng, spec.MaxPatternLength)},
		} {
			title := randomText(rng, spec.MaxTitleLength)
			r := e.do(post, e.listPath(), withTrigger(regexBody(title), tr), nil)
			require.Equal(t, http.StatusCreated, r.Status, "%s trigger: %.300s", tr["type"], r)
			in := decodeJSON[spec.Instruction](t, r)
			require.Equal(t, title, in.Title)
			require.Equal(t, in, e.get(in.ID))
			needle := []rune(title)[50:60]
			l := e.list(url.Values{"search": {string(needle)}}.Encode())
			require.Equal(t, []string{in.ID}, ids(l.Items))
		}
		needle := []rune(values[999])[100:110]
		l := e.list(url.Values{"search": {string(needle)}}.Encode())
		require.Len(t, l.Items, 1)
		require.Equal(t, "StringMatch", l.Items[0].Trigger.Type)
	})
}

func TestCreateAllowRedactionOnlyWithRegexOrStringMatch(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		requireRejectedCreates(e, []badCreate{
			{"Semantic with allowRedaction", with(semanticBody("s", "text"), "allowRedaction", true), 400, "allowRedaction"},
			{"allowRedaction not a boolean", with(regexBody("r"), "allowRedaction", "true"), 400, "allowRedaction"},
		})
		for _, b := range []jsonObj{regexBody("r"), stringMatchBody("m", "x")} {
			in := e.create(with(b, "allowRedaction", true))
			require.True(t, in.AllowRedaction)
			require.True(t, e.get(in.ID).AllowRedaction)
		}
		in := e.create(with(semanticBody("s", "text"), "allowRedaction", false))
		require.False(t, in.AllowRedaction)
	})
}

func TestCreateCategoryID(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("category")
		requireRejectedCreates(e, []badCreate{
			{"not a uuid", with(b, "categoryId", "pii"), 400, "categoryId"},
			{"uuid without hyphens", with(b, "categoryId", strings.ReplaceAll(uuid.NewString(), "-", "")), 400, "categoryId"},
			{"number", with(b, "categoryId", 7), 400, "categoryId"},
			{"empty", with(b, "categoryId", ""), 400, "categoryId"},
		})
		cat := uuid.NewString()
		in := e.create(with(b, "categoryId", cat))
		require.NotNil(t, in.CategoryID)
		require.Equal(t, cat, *in.CategoryID)
		in = e.create(with(b, "categoryId", nil))
		require.Nil(t, in.CategoryID)
	})
}

func TestCreateUsedByValidation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("usedBy")
		a0 := e.Agents[0].ID
		requireRejectedCreates(e, []badCreate{
			{"not a uuid", with(b, "usedBy", []string{"agent-1"}), 400, "usedBy"},
			{"one not a uuid", with(b, "usedBy", []string{a0, "agent-1"}), 400, "usedBy"},
			{"repeated", with(b, "usedBy", []string{a0, a0}), 400, "usedBy"},
			{"repeated in another case", with(b, "usedBy", []string{a0, strings.ToUpper(a0)}), 400, "usedBy"},
			{"unknown agent", with(b, "usedBy", []string{uuid.NewString()}), 400, "usedBy"},
			{"known and unknown", with(b, "usedBy", []string{a0, uuid.NewString()}), 400, "usedBy"},
			{"string", with(b, "usedBy", "x"), 400, "usedBy"},
			{"array of numbers", with(b, "usedBy", []int{1}), 400, "usedBy"},
		})
	})
}

func TestCreateUnknownFieldIsNamed(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("unknown")
		requireRejectedCreates(e, []badCreate{
			{"foo", with(b, "foo", 1), 400, "foo"},
			{"wrong case", with(b, "Title", "x"), 400, "Title"},
			{"id", with(b, "id", uuid.NewString()), 400, "id"},
			{"createdAt", with(b, "createdAt", "2026-03-02T09:14:03.120Z"), 400, "createdAt"},
			{"updatedAt", with(b, "updatedAt", "2026-03-02T09:14:03.120Z"), 400, "updatedAt"},
			{"organisationId", with(b, "organisationId", uuid.NewString()), 400, "organisationId"},
		})
	})
}

func TestCreateWrongTypesAreNamed(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("types")
		requireRejectedCreates(e, []badCreate{
			{"title number", with(b, "title", 5), 400, "title"},
			{"title null", with(b, "title", nil), 400, "title"},
			{"usedBy string", with(b, "usedBy", "x"), 400, "usedBy"},
			{"usedBy object", with(b, "usedBy", jsonObj{}), 400, "usedBy"},
			{"trigger array", with(b, "trigger", []any{}), 400, "trigger"},
			{"trigger string", with(b, "trigger", "Regex"), 400, "trigger"},
			{"trigger null", with(b, "trigger", nil), 400, "trigger"},
			{"action number", with(b, "action", 1), 400, "action"},
			{"criticality bool", with(b, "criticality", true), 400, "criticality"},
			{"allowRedaction string", with(b, "allowRedaction", "yes"), 400, "allowRedaction"},
			{"assessmentId number", with(b, "assessmentId", 5), 400, "assessmentId"},
			{"pattern number", withTrigger(b, jsonObj{"type": "Regex", "pattern": 5}), 400, "trigger.pattern"},
			{"values string", withTrigger(b, jsonObj{"type": "StringMatch", "values": "x"}), 400, "trigger.values"},
			{"isCaseSensitive string", withTrigger(b, jsonObj{"type": "Regex", "pattern": "x", "isCaseSensitive": "no"}), 400, "trigger.isCaseSensitive"},
		})
	})
}

func TestCreateIsNotDeduplicated(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := with(regexBody("twice"), "usedBy", []string{e.Agents[0].ID})
		first := e.create(b)
		second := e.create(b)
		require.NotEqual(t, first.ID, second.ID)
		second.ID = first.ID
		require.Equal(t, first, second, "the two creates differ beyond their ids")
		l := e.list("")
		require.Equal(t, 2, l.TotalCount)
		require.Equal(t, 2, e.counts()[e.Agents[0].ID])
	})
}

func TestCreateUsedByAssignsTheAgents(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		a0, a1, a2 := e.Agents[0].ID, e.Agents[1].ID, e.Agents[2].ID
		require.Equal(t, map[string]int{a0: 0, a1: 0, a2: 0}, e.counts())
		in := e.create(with(regexBody("assigned"), "usedBy", []string{a0, a1}))
		require.ElementsMatch(t, []string{a0, a1}, in.UsedBy)
		require.Equal(t, map[string]int{a0: 1, a1: 1, a2: 0}, e.counts())
		require.Equal(t, []string{in.ID}, ids(e.list("agentId="+a0).Items))
		require.Equal(t, []string{in.ID}, ids(e.list("agentId="+a1).Items))
		require.Empty(t, e.list("agentId="+a2).Items)

		// An agent id in uppercase names the same agent.
		up := e.create(with(regexBody("uppercase"), "usedBy", []string{strings.ToUpper(a2)}))
		require.Len(t, up.UsedBy, 1)
		require.Equal(t, map[string]int{a0: 1, a1: 1, a2: 1}, e.counts())
		require.Equal(t, []string{up.ID}, ids(e.list("agentId="+a2).Items))
	})
}

// ================================================================ bad input

func TestBadBodiesAreRejectedWithoutWriting(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		target := e.create(with(regexBody("target"), "usedBy", []string{e.Agents[0].ID}))
		validCreate, err := json.Marshal(regexBody("TITLE"))
		require.NoError(t, err)
		validPatch := []byte(`{"title":"TITLE"}`)
		pad := func(b []byte, n int) []byte { // b padded with trailing spaces to n bytes
			return append(bytes.Clone(b), bytes.Repeat([]byte(" "), n-len(b))...)
		}
		type bad struct {
			name   string
			body   func(valid []byte) any
			h      hdr
			status int
			field  string
		}
		cases := []bad{
			{"malformed", func([]byte) any { return `{"title":` }, nil, 400, ""},
			{"malformed quote", func([]byte) any { return `{'title':'x'}` }, nil, 400, ""},
			{"trailing object", func([]byte) any { return `{} {}` }, nil, 400, ""},
			{"valid then trailing object", func(v []byte) any { return string(v) + ` {}` }, nil, 400, ""},
			{"valid then garbage", func(v []byte) any { return string(v) + `x` }, nil, 400, ""},
			{"empty", func([]byte) any { return "" }, nil, 400, ""},
			{"whitespace", func([]byte) any { return " \n\t" }, nil, 400, ""},
			{"array", func([]byte) any { return `[]` }, nil, 400, ""},
			{"array of the valid object", func(v []byte) any { return "[" + string(v) + "]" }, nil, 400, ""},
			{"string", func([]byte) any { return `"x"` }, nil, 400, ""},
			{"number", func([]byte) any { return `1` }, nil, 400, ""},
			{"null", func([]byte) any { return `null` }, nil, 400, ""},
			{"invalid UTF-8", func(v []byte) any { return bytes.Replace(v, []byte("TITLE"), []byte("ab\xff\xfecd"), 1) }, nil, 400, ""},
			{"text/plain", func(v []byte) any { return v }, hdr{"Content-Type": "text/plain"}, 400, "Content-Type"},
			{"form", func(v []byte) any { return v }, hdr{"Content-Type": "application/x-www-form-urlencoded"}, 400, "Content-Type"},
			{"no Content-Type", func(v []byte) any { return v }, hdr{"Content-Type": ""}, 400, "Content-Type"},
			{"over 1 MiB by one byte", func(v []byte) any { return pad(v, orgapi.MaxBodyBytes+1) }, nil, 413, ""},
			{"2 MiB", func(v []byte) any { return pad(v, 2*orgapi.MaxBodyBytes) }, nil, 413, ""},
		}
		before := e.state()
		item := e.getRaw(target.ID)
		for _, ep := range []struct {
			method, path string
			valid        []byte
		}{{post, e.listPath(), validCreate}, {patch, e.itemPath(target.ID), validPatch}} {
			for _, c := range cases {
				r := e.do(ep.method, ep.path, c.body(ep.valid), c.h)
				if r.Status != c.status {
					t.Errorf("%s %s: got %s, want %d", ep.method, c.name, r, c.status)
					continue
				}
				p := problem(t, r)
				if c.field != "" {
					require.Contains(t, fieldsOf(p), c.field, "%s %s: %s", ep.method, c.name, r)
				}
			}
		}
		e.requireUnchanged(before)
		require.JSONEq(t, item, e.getRaw(target.ID))

		// A charset parameter is fine, and a body of exactly 1 MiB is not too large.
		r := e.do(post, e.listPath(), validCreate, hdr{"Content-Type": "application/json; charset=utf-8"})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r)
		r = e.do(post, e.listPath(), pad(validCreate, orgapi.MaxBodyBytes), nil)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r)
		r = e.do(patch, e.itemPath(target.ID), pad(validPatch, orgapi.MaxBodyBytes), nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
	})
}

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
		for _, body := range []jsonObj{
			{"usedBy": []string{other, full.ID}},
			{"usedBy": []string{full.ID}},
			{"usedBy": []string{full.ID}, "title": "renamed too"},
		} {
			r := e.do(patch, e.itemPath(x.ID), body, nil)
			requireAgentFull(t, r, full)
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

// ============================================================ assessmentId

func TestAssessmentIDIsUniquePerOrganisation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		bt := e.newTenant("Beta", 1, "beta-key")
		b := e.withT(t)
		b.tenant = bt

		first := e.create(with(regexBody("first"), "assessmentId", "asmt-1"))
		require.NotNil(t, first.AssessmentID)
		require.Equal(t, "asmt-1", *first.AssessmentID)

		before := e.state()
		r := e.do(post, e.listPath(), with(with(regexBody("second"), "assessmentId", "asmt-1"), "usedBy", []string{e.Agents[0].ID}), nil)
		requireProblem(t, r, http.StatusConflict, "assessmentId")
		e.requireUnchanged(before)

		// Another organisation may use it.
		other := b.create(with(regexBody("in B"), "assessmentId", "asmt-1"))
		require.Equal(t, "asmt-1", *other.AssessmentID)

		// PATCH to a used assessmentId: 409 and nothing changes.
		second := e.create(with(regexBody("second"), "assessmentId", "asmt-2"))
		third := e.create(regexBody("third"))
		before = e.state()
		for _, id := range []string{second.ID, third.ID} {
			r = e.do(patch, e.itemPath(id), jsonObj{"assessmentId": "asmt-1", "title": "taken"}, nil)
			requireProblem(t, r, http.StatusConflict, "assessmentId")
		}
		e.requireUnchanged(before)

		// Setting its own assessmentId again is no conflict.
		r = e.do(patch, e.itemPath(first.ID), jsonObj{"assessmentId": "asmt-1"}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)

		// null clears it; then it can be used again.
		r = e.do(patch, e.itemPath(first.ID), jsonObj{"assessmentId": nil}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		require.Nil(t, decodeJSON[spec.Instruction](t, r).AssessmentID)
		require.Nil(t, e.get(first.ID).AssessmentID)
		r = e.do(patch, e.itemPath(third.ID), jsonObj{"assessmentId": "asmt-1"}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		require.Equal(t, "asmt-1", *e.get(third.ID).AssessmentID)
		// And once it is free again, a create may take it.
		r = e.do(patch, e.itemPath(third.ID), jsonObj{"assessmentId": nil}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		e.create(with(regexBody("reuse"), "assessmentId", "asmt-1"))
	})
}

// ===================================================================== list

func TestListPaging(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		for i := range 25 {
			e.create(regexBody(fmt.Sprintf("n%02d", i)))
			e.clock.Advance(time.Millisecond)
		}
		l := e.list("")
		require.Equal(t, 1, l.Page)
		require.Equal(t, 20, l.PageSize)
		require.Equal(t, 25, l.TotalCount)
		require.Len(t, l.Items, 20)
		first := ids(l.Items)

		l = e.list("page=2")
		require.Equal(t, 2, l.Page)
		require.Equal(t, 20, l.PageSize)
		require.Equal(t, 25, l.TotalCount)
		require.Len(t, l.Items, 5)
		all := append(first, ids(l.Items)...)

		l = e.list("pageSize=100")
		require.Equal(t, 100, l.PageSize)
		require.Equal(t, all, ids(l.Items))

		l = e.list("pageSize=1&page=25")
		require.Equal(t, []string{all[24]}, ids(l.Items))

		// Past the end: 200, items [] (not null), the right totalCount.
		for _, q := range []string{"page=3", "page=26&pageSize=1", "page=1000&pageSize=100", "page=9223372036854775807"} {
			r := e.do(get, e.listPath()+"?"+q, nil, nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r)
			m := decodeJSON[map[string]any](t, r)
			require.Equal(t, []any{}, m["items"], "%s: items must be []", q)
			require.EqualValues(t, 25, m["totalCount"], q)
			require.Equal(t, []string{"items", "page", "pageSize", "totalCount"}, keysOf(m))
		}
		// An empty list is a page too.
		r := e.do(get, e.listPath()+"?search=nothing-matches", nil, nil)
		m := decodeJSON[map[string]any](t, r)
		require.Equal(t, []any{}, m["items"])
		require.EqualValues(t, 0, m["totalCount"])
	})
}

func TestListBadPagingParameters(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		e.create(regexBody("one"))
		for _, v := range []string{"0", "101", "-1", "abc", "1.5", "1e2", "99999999999999999999"} {
			r := e.do(get, e.listPath()+"?pageSize="+url.QueryEscape(v), nil, nil)
			requireProblem(t, r, http.StatusBadRequest, "pageSize")
		}
		for _, v := range []string{"0", "-1", "abc", "1.5", "99999999999999999999"} {
			r := e.do(get, e.listPath()+"?page="+url.QueryEscape(v), nil, nil)
			requireProblem(t, r, http.StatusBadRequest, "page")
		}
	})
}

func TestListOrder(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		oldest := e.create(regexBody("oldest"))
		e.clock.Advance(time.Second)
		var same []string
		for i := range 6 {
			same = append(same, e.create(regexBody(fmt.Sprintf("same time %d", i))).ID)
		}
		slices.Sort(same)
		e.clock.Advance(time.Millisecond)
		newest := e.create(regexBody("newest"))
		// Updating does not move an instruction: the order is by createdAt.
		e.clock.Advance(time.Second)
		r := e.do(patch, e.itemPath(oldest.ID), jsonObj{"title": "oldest, updated last"}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)

		want := append(append([]string{newest.ID}, same...), oldest.ID)
		require.Equal(t, want, ids(e.list("pageSize=100").Items))
		var paged []string
		for p := 1; p <= 4; p++ {
			paged = append(paged, ids(e.list(fmt.Sprintf("pageSize=2&page=%d", p)).Items)...)
		}
		require.Equal(t, want, paged)
	})
}

func TestListFilters(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		a0, a1, a2 := e.Agents[0].ID, e.Agents[1].ID, e.Agents[2].ID
		s1 := e.create(with(semanticBody("s1", "text"), "usedBy", []string{a0}))
		r1 := e.create(with(regexBody("r1"), "usedBy", []string{a0, a1}))
		r2 := e.create(with(regexBody("r2"), "action", "Allow"))
		m1 := e.create(with(stringMatchBody("m1", "x"), "usedBy", []string{a1}))                          // Allow
		m2 := e.create(with(with(stringMatchBody("m2", "y"), "action", "Block"), "usedBy", []string{a0})) // Block
		all := []string{s1.ID, r1.ID, r2.ID, m1.ID, m2.ID}
		for q, want := range map[string][]string{
			"":                               all,
			"triggerType=Semantic":           {s1.ID},
			"triggerType=Regex":              {r1.ID, r2.ID},
			"triggerType=StringMatch":        {m1.ID, m2.ID},
			"action=Allow":                   {r2.ID, m1.ID},
			"action=Block":                   {s1.ID, r1.ID, m2.ID},
			"agentType=DataProtection":       all,
			"agentId=" + a0:                  {s1.ID, r1.ID, m2.ID},
			"agentId=" + strings.ToUpper(a0): {s1.ID, r1.ID, m2.ID},
			"agentId=" + a1:                  {r1.ID, m1.ID},
			"agentId=" + a2:                  {},
			"agentId=" + uuid.NewString():    {},
			"triggerType=StringMatch&action=Block&agentId=" + a0:      {m2.ID},
			"triggerType=Regex&agentId=" + a1:                         {r1.ID},
			"action=Allow&agentId=" + a0:                              {},
			"action=Block&triggerType=Regex":                          {r1.ID},
			"agentType=DataProtection&action=Allow&triggerType=Regex": {r2.ID},
			"triggerType=&action=":                                    all, // empty means no filter
		} {
			l := e.list(q)
			require.ElementsMatch(t, want, ids(l.Items), "query %q", q)
			require.Equal(t, len(want), l.TotalCount, "query %q", q)
		}
		for _, c := range []struct{ q, field string }{
			{"triggerType=regex", "triggerType"},
			{"triggerType=Fuzzy", "triggerType"},
			{"action=block", "action"},
			{"action=Deny", "action"},
			{"agentType=Other", "agentType"},
			{"agentType=dataprotection", "agentType"},
			{"agentId=not-a-uuid", "agentId"},
			{"agentId=123", "agentId"},
			{"agentId=" + strings.ReplaceAll(a0, "-", ""), "agentId"},
		} {
			r := e.do(get, e.listPath()+"?"+c.q, nil, nil)
			requireProblem(t, r, http.StatusBadRequest, c.field)
		}
	})
}

func TestListSearch(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		ibanTitle := e.create(regexBody("block iban numbers"))
		ibanValue := e.create(stringMatchBody("bank words", "Iban", "Swift code"))
		merger := e.create(semanticBody("corporate events", "Unannounced MERGER talks"))
		pattern := e.create(withTrigger(regexBody("customer ids"), jsonObj{"type": "Regex", "pattern": `CUST-[0-9]{6}`}))
		percent := e.create(stringMatchBody("100% sure", "alpha"))
		noPercent := e.create(stringMatchBody("100 sure", "alpha"))
		underscore := e.create(stringMatchBody("under_score", "beta"))
		noUnderscore := e.create(stringMatchBody("gamma", "underXscore"))
		accent := e.create(stringMatchBody("ÉCOLE", "delta"))
		all := []string{ibanTitle.ID, ibanValue.ID, merger.ID, pattern.ID, percent.ID, noPercent.ID, underscore.ID, noUnderscore.ID, accent.ID}
		_ = noPercent
		_ = noUnderscore
		for s, want := range map[string][]string{
			"IBAN":        {ibanTitle.ID, ibanValue.ID},
			"iban":        {ibanTitle.ID, ibanValue.ID},
			"lock ib":     {ibanTitle.ID},
			"SWIFT":       {ibanValue.ID},
			"merger":      {merger.ID},
			"announced m": {merger.ID},
			"cust-":       {pattern.ID},
			"[0-9]{6}":    {pattern.ID},
			"%":           {percent.ID},
			"100%":        {percent.ID},
			"_":           {underscore.ID},
			"under_score": {underscore.ID},
			"r_s":         {underscore.ID},
			"école":       {accent.ID},
			"zzz":         {},
			"":            all,
		} {
			q := url.Values{"search": {s}}.Encode()
			l := e.list(q + "&pageSize=100")
			require.ElementsMatch(t, want, ids(l.Items), "search %q", s)
			require.Equal(t, len(want), l.TotalCount, "search %q", s)
		}
		// Search combines with the other filters.
		l := e.list("search=iban&triggerType=Regex")
		require.Equal(t, []string{ibanTitle.ID}, ids(l.Items))
		// A search that is too long, or not UTF-8, is 400 naming search.
		r := e.do(get, e.listPath()+"?search="+strings.Repeat("a", 1001), nil, nil)
		requireProblem(t, r, http.StatusBadRequest, "search")
		r = e.do(get, e.listPath()+"?search=%FF", nil, nil)
		requireProblem(t, r, http.StatusBadRequest, "search")
	})
}

// A search term matches within one field: a term that spans the end of the
// title and the start of a value is in no field.
func TestListSearchDoesNotMatchAcrossFields(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		e.create(stringMatchBody("foo", "bar", "baz"))
		for _, s := range []string{"foo\nbar", "o\nb", "bar\nbaz"} {
			l := e.list(url.Values{"search": {s}}.Encode())
			require.Zero(t, l.TotalCount, "search %q matched across fields", s)
			require.Empty(t, l.Items, "search %q matched across fields", s)
		}
	})
}

func TestListRepeatedParameterIs400(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		e.create(regexBody("one"))
		for _, c := range []struct{ q, field string }{
			{"page=1&page=2", "page"},
			{"page=1&page=1", "page"},
			{"pageSize=10&pageSize=20", "pageSize"},
			{"triggerType=Regex&triggerType=Semantic", "triggerType"},
			{"action=Block&action=Allow", "action"},
			{"agentType=DataProtection&agentType=DataProtection", "agentType"},
			{"agentId=" + e.Agents[0].ID + "&agentId=" + e.Agents[1].ID, "agentId"},
			{"search=a&search=b", "search"},
		} {
			r := e.do(get, e.listPath()+"?"+c.q, nil, nil)
			requireProblem(t, r, http.StatusBadRequest, c.field)
		}
	})
}

func TestListIgnoresUnknownParameters(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		e.create(regexBody("one"))
		e.create(semanticBody("two", "text"))
		plain := e.do(get, e.listPath(), nil, nil)
		require.Equal(t, http.StatusOK, plain.Status, "%s", plain)
		for _, q := range []string{"foo=bar", "sort=title&order=asc", "limit=1&offset=1", "foo=1&foo=2", "Page=5&PAGESIZE=1"} {
			r := e.do(get, e.listPath()+"?"+q, nil, nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r)
			require.JSONEq(t, string(plain.Body), string(r.Body), q)
		}
	})
}

// ================================================================= get one

func TestGetInstruction(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		r := e.do(post, e.listPath(), with(with(stringMatchBody("get me", "a", "b"), "usedBy", []string{e.Agents[1].ID}), "categoryId", uuid.NewString()), nil)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r)
		id := decodeJSON[spec.Instruction](t, r).ID
		g := e.do(get, e.itemPath(id), nil, nil)
		require.Equal(t, http.StatusOK, g.Status, "%s", g)
		require.Equal(t, "application/json", mediaType(t, g))
		require.JSONEq(t, string(r.Body), string(g.Body))

		for _, bad := range []string{uuid.NewString(), "abc", "123", strings.ReplaceAll(id, "-", ""), id + "x", id[:35], "%20" + id} {
			requireProblem(t, e.do(get, e.itemPath(bad), nil, nil), http.StatusNotFound)
		}
	})
}

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
			r := e.do(patch, e.itemPath(in.ID), jsonObj{f: nil}, nil)
			requireProblem(t, r, http.StatusBadRequest, f)
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
			r := e.do(patch, e.itemPath(in.ID), jsonObj{f: v, "title": "must not change"}, nil)
			requireProblem(t, r, http.StatusBadRequest, f)
		}
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
			r := e.do(patch, e.itemPath(in.ID), c.body, nil)
			require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", c.name, r)
			requireProblem(t, r, http.StatusBadRequest, c.field)
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

// ========================================================= methods, paths

func TestUnknownPathsAre404(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		in := e.create(regexBody("x"))
		for _, p := range []string{
			"/", "/nope", "/organisation", "/organisations/" + e.Org.ID + "/nope",
			e.itemPath(in.ID) + "/extra", e.agentsPath() + "/" + e.Agents[0].ID,
			e.orgPath(),
		} {
			requireProblem(t, e.do(get, p, nil, nil), http.StatusNotFound)
		}
	})
}

// allowOf returns the methods of an Allow header.
func allowOf(r response) []string {
	var allow []string
	for _, m := range strings.Split(r.Header.Get("Allow"), ",") {
		if m = strings.TrimSpace(m); m != "" {
			allow = append(allow, m)
		}
	}
	return allow
}

func TestMethodNotAllowedOnInstructions(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		in := e.create(regexBody("x"))
		before := e.state()
		for _, c := range []struct {
			method, path string
			allow        []string
		}{
			{http.MethodPut, e.itemPath(in.ID), []string{"GET", "HEAD", "PATCH", "DELETE"}},
			{post, e.itemPath(in.ID), []string{"GET", "HEAD", "PATCH", "DELETE"}},
			{http.MethodPut, e.listPath(), []string{"GET", "HEAD", "POST"}},
			{del, e.listPath(), []string{"GET", "HEAD", "POST"}},
			{patch, e.listPath(), []string{"GET", "HEAD", "POST"}},
			{del, e.agentsPath(), []string{"GET", "HEAD"}},
			{post, e.agentsPath(), []string{"GET", "HEAD"}},
		} {
			var body any
			if c.method != del {
				body = regexBody("by a wrong method")
			}
			r := e.do(c.method, c.path, body, nil)
			requireProblem(t, r, http.StatusMethodNotAllowed)
			assert.ElementsMatch(t, c.allow, allowOf(r), "%s %s: Allow %q", c.method, c.path, r.Header.Get("Allow"))
		}
		e.requireUnchanged(before)
	})
}

// GET /organisations is the only method on /organisations: any other is 405
// with Allow: GET, HEAD, and HEAD is served like GET.
func TestMethodsOnOrganisations(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		for _, m := range []string{post, http.MethodPut, patch, del} {
			r := e.do(m, "/organisations", jsonObj{"name": "x"}, nil)
			requireProblem(t, r, http.StatusMethodNotAllowed)
			assert.ElementsMatch(t, []string{"GET", "HEAD"}, allowOf(r), "%s /organisations: Allow %q", m, r.Header.Get("Allow"))
		}
		r := e.do(http.MethodHead, "/organisations", nil, nil)
		assert.Equal(t, http.StatusOK, r.Status, "%s", r)
		assert.Empty(t, r.Body)
	})
}

func TestHeadServesGetWithoutBody(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		in := e.create(regexBody("x"))
		for _, p := range []string{e.listPath(), e.listPath() + "?pageSize=5", e.itemPath(in.ID), e.agentsPath()} {
			g := e.do(get, p, nil, nil)
			require.Equal(t, http.StatusOK, g.Status, "%s", g)
			r := e.do(http.MethodHead, p, nil, nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r)
			require.Empty(t, r.Body)
			require.Equal(t, "application/json", mediaType(t, r))
			require.Equal(t, g.Header.Get("Content-Length"), r.Header.Get("Content-Length"))
		}
		r := e.doKey("", http.MethodHead, e.listPath(), nil, nil)
		require.Equal(t, http.StatusUnauthorized, r.Status, "%s", r)
		require.Empty(t, r.Body)
		r = e.do(http.MethodHead, e.itemPath(uuid.NewString()), nil, nil)
		require.Equal(t, http.StatusNotFound, r.Status, "%s", r)
	})
}

// Odd but well-formed requests never get a 5xx (do fails the test on one).
func TestOddRequestsGetNo5xx(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		in := e.create(regexBody("x"))
		for _, body := range []any{
			with(regexBody("nul \u0000 in title"), "usedBy", []string{e.Agents[0].ID}),
			stringMatchBody("nul values", "a\u0000b"),
			semanticBody("nul text", "\u0000"),
			with(regexBody("nul assessment"), "assessmentId", "a\u0000b"),
			with(regexBody("long assessment"), "assessmentId", strings.Repeat("a", 201)),
			`{"title":"a","title":"b"}`,
			`{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
			`{"title":"\ud800"}`,
		} {
			r := e.do(post, e.listPath(), body, nil)
			assert.Less(t, r.Status, 500, "body %v: %s", body, r)
			r = e.do(patch, e.itemPath(in.ID), body, nil)
			assert.Less(t, r.Status, 500, "body %v: %s", body, r)
		}
		for _, q := range []string{"search=%00", "search=a%00b", "search=%25%25", "search=%5C", "search='", "page=%zz",
			"agentId=%00", "pageSize=100&page=92233720368547758", "search=" + url.QueryEscape(strings.Repeat("é", 1000)), "a;b=c"} {
			r := e.do(get, e.listPath()+"?"+q, nil, nil)
			assert.Less(t, r.Status, 500, "%s", r)
		}
		for _, p := range []string{e.itemPath("%00"), e.itemPath("%2F"), "/organisations/%00/instructions", e.itemPath(strings.Repeat("a", 5000))} {
			r := e.do(get, p, nil, nil)
			assert.Less(t, r.Status, 500, "%s", r)
		}
		for _, h := range []hdr{
			{"X-API-Key": strings.Repeat("k", 10000)},
			{"X-API-Key": "", "Authorization": "Bearer " + strings.Repeat("k", 10000)},
			{"X-API-Key": "aiu_\u00e9"},
		} {
			r := e.do(get, "/organisations", nil, h)
			require.Equal(t, http.StatusUnauthorized, r.Status, "%s", r)
		}
	})
}
