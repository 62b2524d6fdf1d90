package telemetry_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/telemetry"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// listedSource is a source as GET /organisations/{id}/sources lists it,
// with what this test reads.
type listedSource struct {
	ID             string     `json:"id"`
	Transport      string     `json:"transport"`
	LastReceivedAt *time.Time `json:"lastReceivedAt"`
	Resources      map[string]struct {
		Records int64 `json:"records"`
	} `json:"resources"`
}

// sourcesList reads the organisation's sources with the API key.
func (e *env) sourcesList(t *testing.T) []listedSource {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.url+"/organisations/"+e.org.ID+"/sources", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.api.Secret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var out []listedSource
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// TestSourceLastReceived: the telemetry source of an Ingestion key is
// listed by the sources API with when it last received an accepted request
// (set once a request, moving forward only) and its records per resource;
// a refused request changes neither.
func TestSourceLastReceived(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db, nil)
		require.Empty(t, e.sourcesList(t), "no source before the key's first request")

		before := time.Now().UTC().Truncate(time.Millisecond)
		code, body := post(t, e.url, "claude_logs.json", false, bearer(e.ingest.Secret))
		require.Equal(t, http.StatusOK, code, string(body))
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		list := e.sourcesList(t)
		require.Len(t, list, 1)
		s := list[0]
		require.Equal(t, telemetry.SourceID(e.ingest.ID), s.ID)
		require.Equal(t, "telemetry", s.Transport)
		require.NotNil(t, s.LastReceivedAt)
		first := *s.LastReceivedAt
		require.False(t, first.Before(before), "%s before %s", first, before)
		require.False(t, first.After(time.Now()))
		require.Positive(t, s.Resources["usage"].Records, "records per resource: %+v", s.Resources)
		records := s.Resources["usage"].Records

		// A refused request (an API key) is not a request received.
		code, _ = post(t, e.url, "claude_logs.json", false, bearer(e.api.Secret))
		require.Equal(t, http.StatusForbidden, code)
		require.Equal(t, first, *e.sourcesList(t)[0].LastReceivedAt)

		// The same payload again: a later time, the same records.
		time.Sleep(5 * time.Millisecond)
		code, body = post(t, e.url, "claude_logs.json", true, bearer(e.ingest.Secret))
		require.Equal(t, http.StatusOK, code, string(body))
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		s = e.sourcesList(t)[0]
		require.True(t, s.LastReceivedAt.After(first), "%s not after %s", s.LastReceivedAt, first)
		require.Equal(t, records, s.Resources["usage"].Records)
	})
}
