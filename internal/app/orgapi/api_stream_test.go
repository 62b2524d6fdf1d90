package orgapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/orgapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// writeRecorder records the largest single write of an answer.
type writeRecorder struct {
	*httptest.ResponseRecorder
	largest int
}

func (w *writeRecorder) Write(b []byte) (int, error) {
	w.largest = max(w.largest, len(b))
	return w.ResponseRecorder.Write(b)
}

// TestListInstructionsStreams: a page of large instructions is written as
// its instructions are read, never as one buffer of the whole page (100
// instructions of up to 1 MiB each would be 100 MiB), and reads the same as
// the store's list.
func TestListInstructionsStreams(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		const n = 30
		for i := range n {
			values := make([]string, 500) // about 100 KB of values
			for j := range values {
				values[j] = fmt.Sprintf("%03d-%03d-", i, j) + strings.Repeat("v", 190)
			}
			_, err := e.store.CreateInstruction(e.ctx(), e.Org.ID, org.InstructionCreate{AgentType: spec.AgentTypeDataProtection,
				Title: fmt.Sprintf("Big %d", i), Trigger: spec.StringMatchTrigger(values, false), Action: spec.ActionBlock,
				Criticality: spec.CriticalityLow}, adminActor)
			require.NoError(t, err)
		}
		h, err := orgapi.NewHandler(e.store)
		require.NoError(t, err)
		for _, query := range []string{"pageSize=100", "pageSize=7&page=2", "pageSize=100&page=9", "search=nothing-matches"} {
			w := &writeRecorder{ResponseRecorder: httptest.NewRecorder()}
			r := httptest.NewRequest(http.MethodGet, e.listPath()+"?"+query, nil)
			r.Header.Set("X-API-Key", e.Key.Secret)
			h.ServeHTTP(w, r)
			require.Equal(t, http.StatusOK, w.Code, "%s: %.300s", query, w.Body.String())
			requireSchemaBody(t, "instruction-list", w.Body.Bytes())
			q, err := orgapi.ParseInstructionQuery(query)
			require.NoError(t, err)
			want, err := e.store.ListInstructions(e.ctx(), e.Org.ID, q)
			require.NoError(t, err)
			wantJSON, err := json.Marshal(want)
			require.NoError(t, err)
			require.JSONEq(t, string(wantJSON), w.Body.String(), query)
			require.Less(t, w.largest, 512<<10, "%s: the page was written in one piece of %d bytes", query, w.largest)
			require.Equal(t, "no-store", w.Header().Get("Cache-Control"))
		}
	})
}

// requireSchemaBody checks body against the spec schema named schema.
func requireSchemaBody(t *testing.T, schema string, body []byte) {
	t.Helper()
	f, err := spec.Validate(schema, body)
	require.NoError(t, err)
	require.True(t, spec.Valid(f), "%s: %v", schema, f)
}
