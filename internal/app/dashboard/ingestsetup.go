package dashboard

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/aiusage/kit/internal/infra/httpx"
)

// ingestSetup is what to paste to send telemetry with a new Ingestion key:
// the OTEL_* variables and Claude Code's managed settings, with this
// service's endpoint and the key.
type ingestSetup struct {
	Endpoint string // the base URL the OTLP/HTTP paths are added to
	Env      string // the variables, as a POSIX shell's export lines
	Settings string // Claude Code's managed-settings.json
}

// otelEnv are the variables an OpenTelemetry SDK reads to send metrics and
// logs over OTLP/HTTP to endpoint with key, in the order they are shown.
func otelEnv(endpoint, key string) [][2]string {
	return [][2]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", endpoint},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer " + key},
		{"OTEL_METRICS_EXPORTER", "otlp"},
		{"OTEL_LOGS_EXPORTER", "otlp"},
	}
}

// newIngestSetup returns what to paste for key, with the endpoint at the
// address r reached: its host, over https when r came over TLS (or through
// a trusted proxy that says so).
func newIngestSetup(r *http.Request, key string) (*ingestSetup, error) {
	scheme := "http"
	if httpx.IsSecure(r) {
		scheme = "https"
	}
	s := &ingestSetup{Endpoint: scheme + "://" + r.Host}
	// Claude Code's managed settings: its switch and the same variables,
	// in an env block (encoding/json sorts the keys).
	env := map[string]string{"CLAUDE_CODE_ENABLE_TELEMETRY": "1"}
	var sh strings.Builder
	for _, v := range otelEnv(s.Endpoint, key) {
		sh.WriteString("export " + v[0] + "=" + shellQuote(v[1]) + "\n")
		env[v[0]] = v[1]
	}
	var settings bytes.Buffer
	enc := json.NewEncoder(&settings)
	enc.SetEscapeHTML(false) // the page escapes it as HTML
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]any{"env": env}); err != nil {
		return nil, err
	}
	s.Env, s.Settings = sh.String(), settings.String()
	return s, nil
}

// shellQuote quotes s for a POSIX shell when it holds more than letters,
// digits and the characters of a URL that a shell takes as they are.
func shellQuote(s string) string {
	safe := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:@%+,=", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	if !strings.ContainsAny(s, `"$`+"`\\!") {
		return `"` + s + `"` // as people write it: "Authorization=Bearer KEY"
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
