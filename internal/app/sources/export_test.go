package sources_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/export"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

// newExport writes a full export set of a demo dataset into a directory
// and serves the same data over REST, for comparison.
func newExport(t *testing.T, conversations int) (dir, restURL string) {
	t.Helper()
	ctx := t.Context()
	src := memsource.New()
	require.NoError(t, demodata.Fill(ctx, demodata.Config{Conversations: conversations, Seed: 4}, "acme", src))
	dir = t.TempDir()
	x, err := export.New(src, export.Config{Dir: dir, Tenant: "acme"})
	require.NoError(t, err)
	_, err = x.Write(ctx, export.Full)
	require.NoError(t, err)
	h, err := provider.NewHandler(src, provider.WithTokens(provider.Token{Secret: providerToken, Tenant: "acme"}))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return dir, srv.URL
}

func TestExportSource(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)
		dir, restURL := newExport(t, 80)

		// From the directory, without a token.
		s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "vendor export", URL: dir, Transport: sources.TransportExport})
		require.NoError(t, err)
		require.Equal(t, sources.TransportExport, s.Transport)
		res, err := e.src.SyncNow(ctx, s.ID)
		require.NoError(t, err)
		require.Positive(t, res.Records())
		view := e.url + "/organisations/" + e.org.ID + "/sources/" + s.ID
		for _, r := range []string{"conversations", "assistants", "events"} {
			require.Equal(t, count(t, restURL, r, providerToken), count(t, view, r, e.key), r)
		}

		// Over HTTP, with the token as a bearer token.
		files := http.FileServer(http.Dir(dir))
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer export-token" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			files.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		s2, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "vendor export over http", URL: srv.URL + "/", Token: "export-token", Transport: sources.TransportExport})
		require.NoError(t, err)
		_, err = e.src.SyncNow(ctx, s2.ID)
		require.NoError(t, err)
		view2 := e.url + "/organisations/" + e.org.ID + "/sources/" + s2.ID
		require.Equal(t, count(t, restURL, "conversations", providerToken), count(t, view2, "conversations", e.key))

		// A wrong token fails every resource, recorded as its last error.
		s3, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "wrong token", URL: srv.URL, Token: "nope", Transport: sources.TransportExport})
		require.NoError(t, err)
		_, err = e.src.SyncNow(ctx, s3.ID)
		require.ErrorIs(t, err, provider.ErrUnauthorized)

		// Moving the export: SetURL checks the export's rules.
		require.ErrorIs(t, e.src.SetURL(ctx, e.org.ID, s.ID, "http://vendor.example/export"), spec.ErrInvalid)
		require.NoError(t, e.src.SetURL(ctx, e.org.ID, s.ID, "file://"+dir))
		_, err = e.src.SyncNow(ctx, s.ID)
		require.NoError(t, err)
	})
}

func TestExportSourceValidation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		for name, tc := range map[string]struct {
			n    sources.SourceCreate
			want string
		}{
			"relative dir":     {sources.SourceCreate{URL: "exports/acme"}, "relative"},
			"http not local":   {sources.SourceCreate{URL: "http://vendor.example/x"}, "use https"},
			"remote file":      {sources.SourceCreate{URL: "file://nas/x"}, "only local files"},
			"token on a dir":   {sources.SourceCreate{URL: "/srv/export", Token: "t"}, "takes no token"},
			"scheme":           {sources.SourceCreate{URL: "s3://bucket/x"}, `scheme "s3"`},
			"every too short":  {sources.SourceCreate{URL: "/srv/export", Every: time.Second}, "every must be at least"},
			"query in the URL": {sources.SourceCreate{URL: "https://vendor.example/x?sig=1"}, "query"},
		} {
			tc.n.Name, tc.n.Transport = name, sources.TransportExport
			_, err := e.src.Add(t.Context(), e.org.ID, tc.n)
			require.ErrorIs(t, err, spec.ErrInvalid, name)
			require.ErrorContains(t, err, tc.want, name)
		}
		// https without a token is fine: the token is optional.
		_, err := e.src.Add(t.Context(), e.org.ID, sources.SourceCreate{Name: "open", URL: "https://vendor.example/export/", Transport: sources.TransportExport})
		require.NoError(t, err)
	})
}
