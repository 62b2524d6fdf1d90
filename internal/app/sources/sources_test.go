package sources_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/conformance"
	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/servicetest"
	"github.com/aiusage/kit/mcp"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

const providerToken = "provider-secret-token"

// testRing encrypts the stored secrets of every environment of the tests,
// so that several environments may share a database.
var testRing = keyring.Ephemeral()

// newProvider serves a demo dataset for tenant acme over REST and MCP.
func newProvider(t *testing.T, conversations int) string {
	t.Helper()
	return newSeededProvider(t, conversations, 0)
}

// newSeededProvider serves the demo dataset of seed for tenant acme over
// REST and MCP.
func newSeededProvider(t *testing.T, conversations int, seed uint64) string {
	t.Helper()
	ctx := t.Context()
	src := memsource.New()
	require.NoError(t, demodata.Fill(ctx, demodata.Config{Conversations: conversations, Seed: seed}, "acme", src))
	m, err := mcp.NewServer(src)
	require.NoError(t, err)
	h, err := provider.NewHandler(src, provider.WithTokens(provider.Token{Secret: providerToken, Tenant: "acme"}),
		provider.WithMount("/mcp", m.HTTPHandler()))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

type env struct {
	db      *sqldb.DB
	orgs    *org.Store
	src     *sources.Service
	srv     *server.Server
	url     string
	org     org.Organisation
	key     string
	other   org.Organisation
	otherKy string
}

// newEnv starts the sources service on db, by default with private
// addresses allowed (the providers of the tests are on loopback) and every
// directory readable; opts change its configuration.
func newEnv(t *testing.T, db *sqldb.DB, opts ...func(*sources.Config)) *env {
	t.Helper()
	ctx := t.Context()
	orgs, err := org.NewStore(ctx, db)
	require.NoError(t, err)
	e := &env{db: db, orgs: orgs}
	actor := org.Actor{Type: org.ActorAdmin, Name: "test"}
	mk := func(name string) (org.Organisation, string) {
		o, err := orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: name}, actor)
		require.NoError(t, err)
		k, err := orgs.CreateKey(ctx, org.KeyCreate{OrganisationID: o.ID, Name: "k", Type: org.KeyTypeAPI}, actor)
		require.NoError(t, err)
		return o, k.Secret
	}
	e.org, e.key = mk("Acme")
	e.other, e.otherKy = mk("Other")
	// Conformance checks unthrottled: at the default 20 requests a second a
	// check of the tests' providers waited some 20 s on the clock.
	cfg := sources.Config{DB: db, Orgs: orgs, Secrets: testRing, ScheduleInterval: time.Second, AllowPrivate: true, ExportRoot: "/",
		ConformanceRate: 10_000}
	for _, o := range opts {
		o(&cfg)
	}
	e.srv = servicetest.New(t, server.Config{DB: db, Orgs: orgs, Secrets: testRing, PollInterval: 50 * time.Millisecond, Sources: cfg})
	e.src = e.srv.Sources()
	srv := httptest.NewServer(e.srv.Handler())
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

func get(t *testing.T, u, key string, v any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if v != nil && resp.StatusCode == http.StatusOK {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
	}
	return resp.StatusCode
}

// count walks a list endpoint and returns how many records it served.
func count(t *testing.T, base, resource, key string) int {
	t.Helper()
	n, cursor := 0, ""
	for {
		u := base + "/" + resource + "?limit=1000"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Data       []json.RawMessage `json:"data"`
			HasMore    bool              `json:"hasMore"`
			NextCursor string            `json:"nextCursor"`
		}
		require.Equal(t, http.StatusOK, get(t, u, key, &page), u)
		n += len(page.Data)
		if !page.HasMore {
			return n
		}
		cursor = page.NextCursor
	}
}

func TestAddValidation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		ctx := t.Context()
		ok := sources.SourceCreate{Name: "vendor", URL: "https://vendor.example/ai", Token: "tok"}
		for name, n := range map[string]sources.SourceCreate{
			"no name":    {URL: ok.URL, Token: "t"},
			"long name":  {Name: string(make([]byte, 201)), URL: ok.URL, Token: "t"},
			"relative":   {Name: "x", URL: "/ai", Token: "t"},
			"ftp":        {Name: "x", URL: "ftp://vendor.example", Token: "t"},
			"no token":   {Name: "x", URL: ok.URL},
			"transport":  {Name: "x", URL: ok.URL, Token: "t", Transport: "grpc"},
			"every тиny": {Name: "x", URL: ok.URL, Token: "t", Every: 5 * time.Second},
		} {
			_, err := e.src.Add(ctx, e.org.ID, n)
			require.ErrorIs(t, err, spec.ErrInvalid, name)
		}
		_, err := e.src.Add(ctx, "00000000-0000-4000-8000-000000000000", ok)
		require.ErrorIs(t, err, spec.ErrNotFound)
		s, err := e.src.Add(ctx, e.org.ID, ok)
		require.NoError(t, err)
		require.Equal(t, sources.TransportREST, s.Transport)
		require.Equal(t, sources.DefaultEvery, s.Every)
		_, err = e.src.Add(ctx, e.org.ID, ok)
		require.ErrorIs(t, err, spec.ErrConflict)

		got, err := e.src.Get(ctx, e.org.ID, s.ID)
		require.NoError(t, err)
		require.Equal(t, s.ID, got.ID)
		require.Equal(t, "tok", got.Token)
		_, err = e.src.Get(ctx, e.other.ID, s.ID)
		require.ErrorIs(t, err, spec.ErrNotFound)
		list, err := e.src.List(ctx, e.org.ID)
		require.NoError(t, err)
		require.Len(t, list, 1)
		_, err = e.src.Remove(ctx, e.other.ID, s.ID)
		require.ErrorIs(t, err, spec.ErrNotFound)
		_, err = e.src.Remove(ctx, e.org.ID, s.ID)
		require.NoError(t, err)
		_, err = e.src.Remove(ctx, e.org.ID, s.ID)
		require.ErrorIs(t, err, spec.ErrNotFound)
	})
}

func TestCollectedView(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)
		provURL := newProvider(t, 120)
		s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "vendor", URL: provURL, Token: providerToken})
		require.NoError(t, err)
		res, err := e.src.SyncNow(ctx, s.ID)
		require.NoError(t, err)
		require.Positive(t, res.Records())

		view := e.url + "/organisations/" + e.org.ID + "/sources/" + s.ID
		for _, r := range []string{"conversations", "assistants", "events"} {
			require.Equal(t, count(t, provURL, r, providerToken), count(t, view, r, e.key), r)
		}
		want := count(t, provURL, "conversations", providerToken)

		var listed []struct {
			ID        string `json:"id"`
			Name      string `json:"name"`
			Transport string `json:"transport"`
			Every     string `json:"every"`
			Token     *string
			Resources map[string]struct {
				Records     int64      `json:"records"`
				LastSuccess *time.Time `json:"lastSuccess"`
			} `json:"resources"`
		}
		require.Equal(t, http.StatusOK, get(t, e.url+"/organisations/"+e.org.ID+"/sources", e.key, &listed))
		require.Len(t, listed, 1)
		require.Equal(t, s.ID, listed[0].ID)
		require.Equal(t, "5m0s", listed[0].Every)
		require.Nil(t, listed[0].Token)
		require.EqualValues(t, want, listed[0].Resources["conversations"].Records)
		require.NotNil(t, listed[0].Resources["conversations"].LastSuccess)
		require.Len(t, listed[0].Resources, 4)

		// Another organisation's key, an unknown or malformed source: 404;
		// no key: 401.
		require.Equal(t, http.StatusNotFound, get(t, view+"/conversations", e.otherKy, nil))
		require.Equal(t, http.StatusNotFound, get(t, e.url+"/organisations/"+e.org.ID+"/sources", e.otherKy, nil))
		var none []json.RawMessage
		require.Equal(t, http.StatusOK, get(t, e.url+"/organisations/"+e.other.ID+"/sources", e.otherKy, &none))
		require.Empty(t, none)
		require.Equal(t, http.StatusNotFound, get(t, e.url+"/organisations/"+e.other.ID+"/sources/"+s.ID+"/conversations", e.otherKy, nil))
		require.Equal(t, http.StatusNotFound, get(t, e.url+"/organisations/"+e.org.ID+"/sources/00000000-0000-4000-8000-000000000000/conversations", e.key, nil))
		require.Equal(t, http.StatusNotFound, get(t, e.url+"/organisations/"+e.org.ID+"/sources/nope/conversations", e.key, nil))
		require.Equal(t, http.StatusUnauthorized, get(t, view+"/conversations", "", nil))
		require.Equal(t, http.StatusUnauthorized, get(t, view+"/conversations", "wrong", nil))
		// A revoked key is refused everywhere, though Authenticate names it
		// beside its error.
		actor := org.Actor{Type: org.ActorAdmin, Name: "test"}
		revoked, err := e.orgs.CreateKey(ctx, org.KeyCreate{OrganisationID: e.org.ID, Name: "revoked", Type: org.KeyTypeAPI}, actor)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, get(t, view+"/conversations", revoked.Secret, nil))
		_, err = e.orgs.RevokeKey(ctx, e.org.ID, revoked.ID, actor)
		require.NoError(t, err)
		for _, u := range []string{view + "/conversations", e.url + "/organisations/" + e.org.ID + "/sources",
			e.url + "/organisations/" + e.org.ID + "/conversations", e.url + "/organisations/" + e.org.ID + "/agents"} {
			require.Equal(t, http.StatusUnauthorized, get(t, u, revoked.Secret, nil), u)
		}
		// The organisation API still routes beside the sources.
		require.Equal(t, http.StatusOK, get(t, e.url+"/organisations/"+e.org.ID+"/agents", e.key, nil))

		// The MCP binding of the collected view: the consumer reads it back.
		s2, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "copy over mcp", URL: view + "/mcp", Token: e.key, Transport: "mcp"})
		require.NoError(t, err)
		_, err = e.src.SyncNow(ctx, s2.ID)
		require.NoError(t, err)
		require.Equal(t, want, count(t, e.url+"/organisations/"+e.org.ID+"/sources/"+s2.ID, "conversations", e.key))

		t.Run("conformance", func(t *testing.T) {
			conformance.Test(t, conformance.Config{BaseURL: view, Token: e.key, MaxRate: 5000})
		})
	})
}

func TestScheduledSync(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)
		provURL := newProvider(t, 30)
		s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "vendor", URL: provURL, Token: providerToken, Every: 10 * time.Second})
		require.NoError(t, err)
		jobsCtx, stop := context.WithCancel(context.Background())
		defer stop()
		require.NoError(t, e.srv.Start(jobsCtx))
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = e.srv.Stop(sctx)
		}()
		want := count(t, provURL, "conversations", providerToken)
		require.Eventually(t, func() bool {
			l, err := e.src.Statuses(ctx, e.org.ID)
			require.NoError(t, err)
			return l[0].Resources["usage"].LastSuccess != nil
		}, 60*time.Second, 100*time.Millisecond)
		require.Equal(t, want, count(t, e.url+"/organisations/"+e.org.ID+"/sources/"+s.ID, "conversations", e.key))
		got, err := e.src.Get(ctx, e.org.ID, s.ID)
		require.NoError(t, err)
		require.NotNil(t, got.LastSyncStartedAt)
		require.True(t, got.NextSyncAt.After(got.CreatedAt))
	})
}

// TestUnreachableMCPSourceFails: an MCP source whose endpoint cannot be
// reached fails every resource, and the status says so.
func TestUnreachableMCPSourceFails(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		ctx := t.Context()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		dead := "http://" + ln.Addr().String() + "/mcp"
		require.NoError(t, ln.Close())
		s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "gone", URL: dead, Token: "t", Transport: sources.TransportMCP})
		require.NoError(t, err)
		_, err = e.src.SyncNow(ctx, s.ID)
		require.Error(t, err)
		listed, err := e.src.Statuses(ctx, e.org.ID)
		require.NoError(t, err)
		require.Len(t, listed, 1)
		require.Len(t, listed[0].Resources, 4)
		for name, r := range listed[0].Resources {
			require.Equal(t, "the source cannot be reached at its address", r.LastError, name)
			require.NotNil(t, r.LastErrorAt, name)
			require.Nil(t, r.LastSuccess, name)
		}
	})
}
