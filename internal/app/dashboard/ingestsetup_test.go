package dashboard_test

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

var (
	envRe      = regexp.MustCompile(`(?s)<textarea id="otelenv"[^>]*>(.*?)</textarea>`)
	settingsRe = regexp.MustCompile(`(?s)<textarea id="ccsettings"[^>]*>(.*?)</textarea>`)
)

// TestIngestionKeySetup creates an Ingestion key through the form and finds,
// beside its secret, the variables and Claude Code's managed settings with
// this service's endpoint and the key; the endpoint they name takes the key.
func TestIngestionKeySetup(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		b := e.browser()
		b.signIn(t, "ada@acme.test", "/settings/api-keys")
		host := strings.TrimPrefix(e.url, "http://")
		for _, c := range []struct {
			name, proto, endpoint string
		}{
			{"plain http", "", "http://" + host},
			{"behind a TLS proxy", "https", "https://" + host},
		} {
			t.Run(c.name, func(t *testing.T) {
				p := b.do(t, http.MethodPost, "/settings/api-keys", url.Values{"name": {"laptops " + c.name}, "type": {"Ingestion"}},
					"X-Forwarded-Proto", c.proto)
				require.Equal(t, http.StatusCreated, p.Status, p.Body)
				m := secretRe.FindStringSubmatch(p.Body)
				require.NotNil(t, m, p.Body)
				key := m[1]

				em := envRe.FindStringSubmatch(p.Body)
				require.NotNil(t, em, "the variables are shown: %s", p.Body)
				require.Equal(t, "export OTEL_EXPORTER_OTLP_ENDPOINT="+c.endpoint+"\n"+
					"export OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf\n"+
					`export OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer `+key+`"`+"\n"+
					"export OTEL_METRICS_EXPORTER=otlp\n"+
					"export OTEL_LOGS_EXPORTER=otlp\n", html.UnescapeString(em[1]))

				sm := settingsRe.FindStringSubmatch(p.Body)
				require.NotNil(t, sm, "the managed settings are shown: %s", p.Body)
				var settings struct {
					Env map[string]string `json:"env"`
				}
				require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(sm[1])), &settings))
				require.Equal(t, map[string]string{
					"CLAUDE_CODE_ENABLE_TELEMETRY": "1",
					"OTEL_EXPORTER_OTLP_ENDPOINT":  c.endpoint,
					"OTEL_EXPORTER_OTLP_PROTOCOL":  "http/protobuf",
					"OTEL_EXPORTER_OTLP_HEADERS":   "Authorization=Bearer " + key,
					"OTEL_METRICS_EXPORTER":        "otlp",
					"OTEL_LOGS_EXPORTER":           "otlp",
				}, settings.Env)
				for _, want := range []string{"/etc/claude-code/managed-settings.json",
					"/Library/Application Support/ClaudeCode/managed-settings.json",
					`C:\ProgramData\ClaudeCode\managed-settings.json`, "docs/telemetry.md", `data-copy="otelenv"`, `data-copy="ccsettings"`} {
					require.Contains(t, html.UnescapeString(p.Body), want)
				}
				require.NotContains(t, b.get(t, "/settings/api-keys").Body, key, "the key is shown only once")
				if c.proto == "" {
					sendWith(t, settings.Env)
				}
			})
		}
	})
}

// sendWith sends an empty OTLP/JSON logs export as an SDK configured with
// env would, and requires it accepted.
func sendWith(t *testing.T, env map[string]string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, env["OTEL_EXPORTER_OTLP_ENDPOINT"]+"/v1/logs", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	name, value, ok := strings.Cut(env["OTEL_EXPORTER_OTLP_HEADERS"], "=")
	require.True(t, ok)
	req.Header.Set(name, value)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestAPIKeyNoSetup: an API key's page shows its secret and nothing to paste
// for telemetry.
func TestAPIKeyNoSetup(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newEnv(t, db)
	b := e.browser()
	b.signIn(t, "ada@acme.test", "/settings/api-keys")
	p := b.post(t, "/settings/api-keys", url.Values{"name": {"crm-sync"}, "type": {"API"}})
	require.Equal(t, http.StatusCreated, p.Status, p.Body)
	require.NotNil(t, secretRe.FindStringSubmatch(p.Body))
	for _, absent := range []string{"OTEL_", "CLAUDE_CODE_ENABLE_TELEMETRY", "managed-settings.json", `id="otelenv"`, `id="ccsettings"`} {
		require.NotContains(t, p.Body, absent)
	}
}
