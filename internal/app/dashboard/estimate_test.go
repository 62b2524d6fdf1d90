package dashboard_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// postClaudeRequest sends, as Claude Code does (OTLP/JSON logs), one
// api_request event at at with a cost estimate, with the Ingestion key key.
func postClaudeRequest(t *testing.T, base, key string, at time.Time, model string, in, out int64, costUSD float64) {
	t.Helper()
	body := fmt.Sprintf(`{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"claude-code"}},
{"key":"service.version","value":{"stringValue":"2.1.332"}}]},"scopeLogs":[{"scope":{"name":"com.anthropic.claude_code.events"},
"logRecords":[{"timeUnixNano":"%d","observedTimeUnixNano":"%d","body":{"stringValue":"claude_code.api_request"},"attributes":[
{"key":"event.name","value":{"stringValue":"api_request"}},{"key":"event.timestamp","value":{"stringValue":"%s"}},
{"key":"event.sequence","value":{"intValue":1}},{"key":"session.id","value":{"stringValue":"est-%s"}},
{"key":"user.email","value":{"stringValue":"ada@acme.test"}},{"key":"model","value":{"stringValue":"%s"}},
{"key":"input_tokens","value":{"intValue":%d}},{"key":"output_tokens","value":{"intValue":%d}},
{"key":"cache_read_tokens","value":{"intValue":0}},{"key":"cache_creation_tokens","value":{"intValue":0}},
{"key":"cost_usd","value":{"doubleValue":%g}},{"key":"request_id","value":{"stringValue":"req-%s"}}]}]}]}]}`,
		at.UnixNano(), at.UnixNano(), at.Format("2006-01-02T15:04:05.000Z"), model, model, in, out, costUSD, model)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/logs", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.NotContains(t, string(b), "rejected", "the event is taken")
}

// TestUsageEstimatedCost: the usage page and the overview say which part
// of the organisation's cost is the AI tools' own estimate: a provider's
// cost and a telemetry source's estimate, summed, and then a price for the
// model, which replaces the estimate.
func TestUsageEstimatedCost(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newUsageEnv(t, db)
		adm := e.browser()
		adm.signIn(t, "ada@acme.test", "/")
		e.addSource(t, vendorOne) // costs 3.50, none estimated
		key, err := e.orgs.CreateKey(t.Context(), org.KeyCreate{OrganisationID: e.org.ID, Name: "laptops", Type: org.KeyTypeIngestion}, admin)
		require.NoError(t, err)
		at := usageDay0.AddDate(0, 0, 1).Add(13 * time.Hour)
		postClaudeRequest(t, e.url, key.Secret, at, "claude-sonnet-4-5", 1000, 100, 2.5)

		from, to := usageDay0.Format("2006-01-02"), usageDay0.AddDate(0, 0, 2).Format("2006-01-02")
		var p page
		require.Eventually(t, func() bool {
			p = adm.get(t, "/usage?from="+from+"&to="+to)
			// The page reads its tiles and tables in several queries: wait
			// until the rollup had committed before the first of them.
			return strings.Contains(p.Body, "claude-sonnet-4-5") && strings.Contains(p.Body, `<span class="n">USD 6.00</span> cost`)
		}, 30*time.Second, 100*time.Millisecond, "the telemetry is rolled up into the usage")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, `<span class="n">USD 6.00</span> cost <span class="est">(of which estimated by the AI tools themselves: USD 2.50; set prices to compute it from tokens)</span>`)
		// The model's row: all of its cost is the estimate; the provider's
		// models have none.
		require.Regexp(t, `claude-sonnet-4-5</span></span></th>(<td class="num">[^<]*</td>){4}<td class="num">USD 2\.50<br><span class="est">estimate</span></td>`, p.Body)
		require.Regexp(t, `gpt-large</span></span></th>(<td class="num">[^<]*</td>){4}<td class="num">USD 1\.50</td>`, p.Body)
		// The total rows: the part estimated.
		require.Contains(t, p.Body, `<td class="num">USD 6.00<br><span class="est">est. USD 2.50</span></td>`)
		ov := adm.get(t, "/")
		require.Contains(t, ov.Body, `, cost USD 6.00 <span class="est">(of which estimated by the AI tools themselves: USD 2.50)</span>`, ov.Body)

		// A price for the model: its cost is computed from the tokens
		// (1000 × 3 + 100 × 15 per million), and nothing is an estimate.
		// Set on the Prices page, which has the hours computed again.
		p = adm.post(t, "/settings/prices", url.Values{"model": {"claude-sonnet-4-5"}, "input": {"3"}, "cacheRead": {"0.3"},
			"cacheWrite": {"3.75"}, "output": {"15"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Eventually(t, func() bool {
			p = adm.get(t, "/usage?from="+from+"&to="+to)
			return !strings.Contains(p.Body, `class="est"`)
		}, 30*time.Second, 100*time.Millisecond, "repriced, no estimate is left")
		require.Contains(t, p.Body, `<span class="n">USD 3.50</span> cost</div>`, "3.50 + 0.0045, shown to the cent")
		ov = adm.get(t, "/")
		require.NotContains(t, ov.Body, "estimated")
	})
}
