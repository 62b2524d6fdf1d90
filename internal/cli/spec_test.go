package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/aiusage/kit/spec"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestSpecValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeFile(t, dir, "good.json", `{"id":"c1","startedAt":"2026-01-02T03:04:05.000Z","messages":[{"role":"user","content":"hi"}]}`)
	page := writeFile(t, dir, "page.json", `{"data":[{"id":"c1","startedAt":"2026-01-02T03:04:05Z"},{"id":"c2","startedAt":"2026-01-02T03:04:05+01:00"}],"hasMore":true,"nextCursor":"abc"}`)
	goodPage := writeFile(t, dir, "goodpage.json", `{"data":[{"id":"c1","startedAt":"2026-01-02T03:04:05Z"}],"hasMore":false,"nextCursor":null}`)
	bad := writeFile(t, dir, "bad.json", `{"startedAt":"2026-01-02 03:04:05Z","messages":"hello"}`)
	warn := writeFile(t, dir, "warn.json", `{"id":"c1","startedAt":"2026-01-02T03:04:05Z","messages":[{"role":"developer"}]}`)
	notJSON := writeFile(t, dir, "notjson.json", `{"id":`)
	title := writeFile(t, dir, "title.json", `{"agentType":"DataProtection","title":"`+strings.Repeat("x", 201)+`","trigger":{"type":"Regex"},"action":"Block","criticality":"High"}`)

	t.Run("valid record and page", func(t *testing.T) {
		t.Parallel()
		r := runCLI(t, "", nil, "spec", "validate", "--schema", "conversation", good, goodPage)
		require.Equal(t, ExitOK, r.code, r.stdout+r.stderr)
		require.Empty(t, r.stdout)
		require.Contains(t, r.stderr, "0 of 2 document(s) invalid")
	})
	t.Run("envelope items are checked", func(t *testing.T) {
		t.Parallel()
		r := runCLI(t, "", nil, "spec", "validate", "--schema", "conversation", page)
		require.Equal(t, ExitFailure, r.code)
		require.Equal(t, page+`:/data/1/startedAt: "2026-01-02T03:04:05+01:00" is not in UTC: write it with Z instead of an offset, for example 2026-01-02T03:04:05Z`+"\n", r.stdout)
	})
	t.Run("findings point at the failing fields", func(t *testing.T) {
		t.Parallel()
		r := runCLI(t, "", nil, "spec", "validate", "--schema", "conversation", bad, good)
		require.Equal(t, ExitFailure, r.code)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		require.Len(t, lines, 3, r.stdout)
		require.True(t, strings.HasPrefix(lines[0], bad+":/id: "), lines[0])
		require.True(t, strings.HasPrefix(lines[1], bad+":/messages: "), lines[1])
		require.True(t, strings.HasPrefix(lines[2], bad+":/startedAt: "), lines[2])
		require.Contains(t, r.stderr, "1 of 2 document(s) invalid")
	})
	t.Run("warnings do not fail", func(t *testing.T) {
		t.Parallel()
		r := runCLI(t, "", nil, "spec", "validate", "--schema", "conversation", warn)
		require.Equal(t, ExitOK, r.code)
		require.True(t, strings.HasPrefix(r.stdout, warn+":/messages/0/role: warning: "), r.stdout)
		r = runCLI(t, "", nil, "spec", "validate", "--schema", "conversation", "--lenient", warn)
		require.Equal(t, ExitOK, r.code)
		require.Empty(t, r.stdout)
	})
	t.Run("not JSON is invalid", func(t *testing.T) {
		t.Parallel()
		r := runCLI(t, "", nil, "spec", "validate", "--schema", "event", notJSON)
		require.Equal(t, ExitFailure, r.code)
		require.True(t, strings.HasPrefix(r.stdout, notJSON+":: "), r.stdout)
	})
	t.Run("title of 201 characters", func(t *testing.T) {
		t.Parallel()
		r := runCLI(t, "", nil, "spec", "validate", "--schema", "instruction-create", title)
		require.Equal(t, ExitFailure, r.code)
		require.Contains(t, r.stdout, title+":/title: ")
		require.Contains(t, r.stdout, title+":/trigger/pattern: ")
	})
	t.Run("broken envelopes point at the envelope", func(t *testing.T) {
		t.Parallel()
		for doc, want := range map[string]string{
			`{"data":[{"id":"c1","startedAt":"2026-01-02T03:04:05Z"}],"nextCursor":null}`: ":/hasMore: ",
			`{"data":{},"hasMore":false}`:                     ":/data: ",
			`{"data":null,"hasMore":false,"nextCursor":null}`: ":/data: ",
			`{"data":[],"hasMore":true,"nextCursor":null}`:    ":/nextCursor: ",
		} {
			r := runCLI(t, doc, nil, "spec", "validate", "--schema", "conversation", "-")
			require.Equal(t, ExitFailure, r.code, doc)
			require.Contains(t, r.stdout, "<stdin>"+want, doc)
			require.NotContains(t, r.stdout, "/id:", doc)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		t.Parallel()
		r := runCLI(t, `{"id":"e1","occurredAt":"2026-01-02T03:04:05z"}`, nil, "spec", "validate", "--schema", "event", "-")
		require.Equal(t, ExitFailure, r.code)
		require.True(t, strings.HasPrefix(r.stdout, "<stdin>:/occurredAt: "), r.stdout)
	})
}

func TestSpecList(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "", nil, "spec", "list")
	require.Equal(t, ExitOK, r.code)
	require.Equal(t, strings.Join(spec.Schemas(), "\n")+"\n", r.stdout)
	for _, n := range []string{"conversation", "usage-bucket", "assistant", "event", "instruction", "trigger", "review-task", "webhook", "problem", "review-error"} {
		require.Contains(t, strings.Fields(r.stdout), n)
	}
}

func TestSpecSchema(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "", nil, "spec", "schema", "conversation")
	require.Equal(t, ExitOK, r.code)
	require.Contains(t, r.stdout, `"$id": "https://schemas.aiusage.dev/v1/conversation.json"`)
}

func TestSpecOpenAPI(t *testing.T) {
	t.Parallel()
	for _, name := range spec.OpenAPIDocuments() {
		r := runCLI(t, "", nil, "spec", "openapi", name)
		require.Equal(t, ExitOK, r.code, r.stderr)
		var doc map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(r.stdout), &doc))
		require.Contains(t, doc["openapi"], "3.1")
		require.NotContains(t, r.stdout, "../schemas/", "bundled document must stand alone")

		r = runCLI(t, "", nil, "spec", "openapi", "--raw", name)
		require.Equal(t, ExitOK, r.code)
		src, err := spec.OpenAPISource(name)
		require.NoError(t, err)
		require.Equal(t, string(src), r.stdout)
	}
}
