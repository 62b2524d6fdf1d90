package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs the command line in-process with the given environment.
func runCLI(t *testing.T, stdin string, environ map[string]string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	e := &env{
		stdin:  strings.NewReader(stdin),
		stdout: &out,
		stderr: &errOut,
		getenv: testGetenv(environ),
	}
	code := run(context.Background(), e, args)
	return result{code, out.String(), errOut.String()}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./internal/cli -update to create it")
	require.Equal(t, string(want), got, "golden file %s differs; run go test ./internal/cli -update if the change is intended", path)
}

// walk calls fn with the path of every command of the tree.
func walk(c *command, path []string, fn func([]string, *command)) {
	fn(path, c)
	for _, s := range c.subs {
		walk(s, append(append([]string(nil), path...), s.name), fn)
	}
}

func TestHelpGolden(t *testing.T) {
	t.Parallel()
	walk(root(), nil, func(path []string, c *command) {
		name := "help"
		if len(path) > 0 {
			name += "-" + strings.Join(path, "-")
		}
		r := runCLI(t, "", nil, append([]string{"help"}, path...)...)
		require.Equal(t, ExitOK, r.code, r.stderr)
		require.Empty(t, r.stderr)
		golden(t, name, r.stdout)
		if c.run != nil {
			// --help on a leaf prints the same text.
			r2 := runCLI(t, "", nil, append(path, "--help")...)
			require.Equal(t, ExitOK, r2.code)
			require.Equal(t, r.stdout, r2.stdout)
		}
	})
}

func TestHelpAtEveryLevel(t *testing.T) {
	t.Parallel()
	a := runCLI(t, "", nil, "help", "spec", "validate")
	b := runCLI(t, "", nil, "spec", "help", "validate")
	c := runCLI(t, "", nil, "spec", "validate", "--help")
	require.Equal(t, ExitOK, b.code, b.stderr)
	require.Equal(t, a.stdout, b.stdout)
	require.Equal(t, a.stdout, c.stdout)
	d := runCLI(t, "", nil, "spec", "--help")
	require.Equal(t, ExitOK, d.code)
	require.Contains(t, d.stdout, "validate")
}

// TestHelpShowsEnvironment checks that the help of every command shows the
// environment variable of each flag that has one, on the flag's line, and
// none for the others.
func TestHelpShowsEnvironment(t *testing.T) {
	t.Parallel()
	walk(root(), nil, func(path []string, c *command) {
		if c.run == nil {
			return
		}
		fs := newFlagSet(c, path)
		r := runCLI(t, "", nil, append([]string{"help"}, path...)...)
		lines := map[string]string{}
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, "  --") {
				lines[strings.Fields(l)[0]] = l
			}
		}
		fs.VisitAll(func(f *flag.Flag) {
			l, ok := lines["--"+f.Name]
			require.True(t, ok, "%v: no line for --%s", path, f.Name)
			if v := envFor(strings.Join(path, " "), f.Name); v != "" {
				require.True(t, strings.HasSuffix(l, "  [$"+v+"]"), "%v: %q", path, l)
			} else {
				require.NotContains(t, l, "[$", "%v", path)
			}
		})
	})
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "needs a command"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown subcommand", []string{"spec", "frobnicate"}, `unknown command "frobnicate" for aiusage spec`},
		{"unknown flag", []string{"spec", "validate", "--nope", "x.json"}, "flag provided but not defined: -nope"},
		{"help of unknown", []string{"help", "nope"}, `unknown command "nope"`},
		{"version args", []string{"version", "extra"}, "takes no arguments"},
		{"validate without schema", []string{"spec", "validate", "x.json"}, "--schema is required"},
		{"validate unknown schema", []string{"spec", "validate", "--schema", "nope", "x.json"}, `unknown schema "nope"`},
		{"validate common", []string{"spec", "validate", "--schema", "common", "x.json"}, `unknown schema "common"`},
		{"validate no files", []string{"spec", "validate", "--schema", "conversation"}, "no FILE given"},
		{"validate missing file", []string{"spec", "validate", "--schema", "conversation", "/nonexistent/x.json"}, "no such file"},
		{"validate stdin twice", []string{"spec", "validate", "--schema", "conversation", "-", "-"}, "standard input (-) given twice"},
		{"openapi unknown", []string{"spec", "openapi", "nope"}, `unknown OpenAPI document "nope"`},
		{"openapi no name", []string{"spec", "openapi"}, "exactly one document name"},
		{"schema unknown", []string{"spec", "schema", "nope"}, `unknown schema "nope"`},
		{"list args", []string{"spec", "list", "x"}, "takes no arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, "", nil, tc.args...)
			require.Equal(t, ExitUsage, r.code, "stderr: %s", r.stderr)
			require.Contains(t, r.stderr, tc.want)
			require.True(t, strings.HasPrefix(r.stderr, "aiusage") || strings.Contains(r.stderr, "aiusage:"), r.stderr)
		})
	}
}

// TestNoArgumentsFromTree checks that every command without an argument
// synopsis refuses positional arguments, naming itself as the tree does,
// before it runs (so no server starts and no database opens).
func TestNoArgumentsFromTree(t *testing.T) {
	t.Parallel()
	n := 0
	walk(root(), nil, func(path []string, c *command) {
		if c.run == nil || c.args != "" {
			return
		}
		n++
		r := runCLI(t, "", nil, append(append([]string(nil), path...), "extra")...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", path, r.stderr)
		require.Equal(t, fmt.Sprintf("aiusage: %s takes no arguments, got \"extra\"\n", strings.Join(path, " ")), r.stderr, path)
		require.Empty(t, r.stdout, path)
	})
	require.Greater(t, n, 20)
}

func TestEnvFallback(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "c.json")
	require.NoError(t, os.WriteFile(f, []byte(`{"id":"c1","startedAt":"2026-01-02T03:04:05.000Z"}`), 0o644))

	// A flag not in the list reads no variable, even one of its name.
	r := runCLI(t, "", map[string]string{"AIUSAGE_SCHEMA": "conversation"}, "spec", "validate", f)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "--schema is required")

	// A listed one does; the command line wins over it.
	bad := map[string]string{"AIUSAGE_DATABASE_URL": "nope://x"}
	r = runCLI(t, "", bad, "admin", "org", "list")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "--database-url")
	r = runCLI(t, "", bad, "admin", "org", "list", "--database-url", "sqlite:"+filepath.Join(dir, "s.db"))
	require.Equal(t, ExitOK, r.code, r.stderr)

	// A bad value in the environment is a usage error naming the variable,
	// before anything runs.
	r = runCLI(t, "", map[string]string{"AIUSAGE_SHUTDOWN_TIMEOUT": "maybe"}, "service", "serve", "--database-url", "sqlite::memory:")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "AIUSAGE_SHUTDOWN_TIMEOUT")
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "", nil, "version")
	require.Equal(t, ExitOK, r.code)
	require.Equal(t, "aiusage "+Version()+" (commit "+Commit()+")\n", r.stdout)
	r = runCLI(t, "", nil, "--version")
	require.Equal(t, ExitOK, r.code)
	require.Equal(t, "aiusage "+Version()+" (commit "+Commit()+")\n", r.stdout)
}

func TestParseInterspersed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args       []string
		schema     string
		positional []string
	}{
		{[]string{"a", "--schema", "s", "b"}, "s", []string{"a", "b"}},
		{[]string{"--schema=s", "a"}, "s", []string{"a"}},
		{[]string{"a", "b", "-schema", "s"}, "s", []string{"a", "b"}},
		{[]string{"--schema", "s", "--", "--x", "-"}, "s", []string{"--x", "-"}},
		{[]string{"-", "--schema", "s"}, "s", []string{"-"}},
		{nil, "", nil},
	}
	for _, tc := range cases {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		s := fs.String("schema", "", "")
		got, err := parseInterspersed(fs, tc.args)
		require.NoError(t, err, tc.args)
		require.Equal(t, tc.schema, *s, tc.args)
		require.Equal(t, tc.positional, got, tc.args)
	}
}
