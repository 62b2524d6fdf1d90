package cli

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// envReads returns, for every flag of every command of the tree, the
// environment variable the command line reads for it ("" for none), keyed
// by "command path --flag". It finds them by running applyEnv with a
// getenv that records what it is asked, so that it sees what is read, not
// what the list says.
func envReads(t *testing.T) map[string]string {
	t.Helper()
	reads := map[string]string{}
	walk(root(), nil, func(path []string, c *command) {
		if c.run == nil {
			return
		}
		cmd := strings.Join(path, " ")
		fs := newFlagSet(c, append([]string{"aiusage"}, path...))
		fs.VisitAll(func(f *flag.Flag) {
			// Every flag but f is on the command line, so only f may read.
			one := newFlagSet(c, append([]string{"aiusage"}, path...))
			one.SetOutput(io.Discard)
			var args []string
			one.VisitAll(func(g *flag.Flag) {
				if g.Name != f.Name {
					args = append(args, "--"+g.Name+"="+g.DefValue)
				}
			})
			require.NoError(t, one.Parse(args), "%s", cmd)
			var asked []string
			require.NoError(t, applyEnv(one, cmd, func(k string) string { asked = append(asked, k); return "" }))
			require.LessOrEqual(t, len(asked), 1, "%s --%s reads %v", cmd, f.Name, asked)
			reads[cmd+" --"+f.Name] = strings.Join(asked, "")
		})
	})
	return reads
}

// TestEnvironmentOnlyDocumented enumerates every flag of the command tree
// and fails if one reads an environment variable that is not in the
// documented list, or another than the list gives it; and if an entry of
// the list names a command or flag that does not exist.
func TestEnvironmentOnlyDocumented(t *testing.T) {
	t.Parallel()
	listed := map[string]envVar{}
	for _, v := range environment {
		_, dup := listed[v.name]
		require.False(t, dup, "%s listed twice", v.name)
		require.Regexp(t, `^AIUSAGE_[A-Z][A-Z_]*$`, v.name)
		require.NotEmpty(t, v.doc, v.name)
		listed[v.name] = v
	}
	reads := envReads(t)
	n := 0
	for key, name := range reads {
		if name == "" {
			continue
		}
		n++
		v, ok := listed[name]
		require.True(t, ok, "%s reads %s, which is not in the documented list (environment in environ.go)", key, name)
		require.True(t, strings.HasSuffix(key, " --"+v.flag), "%s reads %s, the variable of --%s", key, name, v.flag)
	}
	require.Greater(t, n, 10)
	// Every entry is read, by the flag it names, in every command it names
	// (for a group, in every command under it; a command that runs names
	// itself, not the commands under it, such as "conformance push").
	for _, v := range environment {
		if v.flag == "" {
			// Read by the commands themselves (a secret that has no flag):
			// the tests of secrets_test.go and metrics_test.go run them.
			for _, c := range v.commands {
				require.NotNil(t, findPath(root(), strings.Fields(c)), "%s: no command %q", v.name, c)
			}
			continue
		}
		for _, c := range v.commands {
			node := findPath(root(), strings.Fields(c))
			require.NotNil(t, node, "%s: no command %q", v.name, c)
			walk(node, strings.Fields(c), func(path []string, leaf *command) {
				if leaf.run == nil || leaf != node && node.run != nil {
					return
				}
				key := strings.Join(path, " ") + " --" + v.flag
				require.Equal(t, v.name, reads[key], "%s (listed for %q)", key, c)
			})
		}
	}
	// The serving commands are the ones with the server flags.
	var withAddr []string
	walk(root(), nil, func(path []string, c *command) {
		if c.run != nil && newFlagSet(c, path).Lookup("addr") != nil {
			withAddr = append(withAddr, strings.Join(path, " "))
		}
	})
	require.ElementsMatch(t, serving, withAddr)
}

// TestEnvironmentCredentials checks that no environment variable is both a
// credential a command sends and one a server accepts, and that the roles of
// the list are right: every flag holding a token, a secret or a key that
// reads a variable is a credential, accepted only by a serving command and
// sent only by a client, or sent upstream (to a service the command depends
// on) and never accepted.
func TestEnvironmentCredentials(t *testing.T) {
	t.Parallel()
	roles := map[string]map[envRole][]string{}
	for _, v := range environment {
		if roles[v.name] == nil {
			roles[v.name] = map[envRole][]string{}
		}
		for _, c := range v.commands {
			roles[v.name][v.role] = append(roles[v.name][v.role], c)
			isServing := slices.Contains(serving, c)
			switch v.role {
			case envAccepted:
				require.True(t, isServing, "%s: %q accepts a credential but does not serve", v.name, c)
			case envSent:
				require.False(t, isServing, "%s: %q sends a credential but serves", v.name, c)
			}
		}
		if strings.Contains(v.flag, "token") || strings.Contains(v.flag, "secret") || strings.Contains(v.flag, "key") {
			require.NotEqual(t, envSetting, v.role, "%s holds --%s, a credential, but is listed as a setting", v.name, v.flag)
		}
	}
	for name, r := range roles {
		require.False(t, len(r[envSent]) > 0 && len(r[envAccepted]) > 0,
			"%s is a credential sent by %v and accepted by %v", name, r[envSent], r[envAccepted])
		require.Len(t, r, 1, "%s has several roles: %v", name, r)
	}
	// And in the running command: a client's token does not open provider
	// serve, its own variable does.
	dir := t.TempDir()
	r := runCLI(t, "", map[string]string{"AIUSAGE_TOKEN": "s3cret", "AIUSAGE_DATABASE_URL": "sqlite:" + filepath.Join(dir, "p.db")}, "provider", "serve", "--addr", "127.0.0.1:0")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "at least one --token is required")
	r = runCLI(t, "", map[string]string{"AIUSAGE_PROVIDER_TOKENS": "a b=read:nope", "AIUSAGE_DATABASE_URL": "sqlite:" + filepath.Join(dir, "p.db")}, "provider", "serve", "--addr", "127.0.0.1:0")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "read:nope", "the second of the space-separated tokens is read")
}

// TestEnvironmentInDocs checks that the generated reference, docs/cli.md,
// names every variable of the list, and that no page of the docs (nor the
// README) names an AIUSAGE_ variable the command line does not read, but for
// those of the tests.
func TestEnvironmentInDocs(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	cli, err := os.ReadFile(filepath.Join(root, "docs", "cli.md"))
	require.NoError(t, err)
	names := []string{"AIUSAGE_TEST_DATABASE_URL", "AIUSAGE_REQUIRE_POSTGRES", "AIUSAGE_REQUIRE_NODE", // read by tests
		"AIUSAGE_REQUIRE_CHROMIUM", "AIUSAGE_CHROMIUM", "AIUSAGE_SCREENSHOTS", "AIUSAGE_SOAK", "AIUSAGE_SOAK_REPORT", "AIUSAGE_SOAK_ATTACKS", "AIUSAGE_SCALE", "AIUSAGE_SCALE_REPORT"}
	for _, v := range environment {
		names = append(names, v.name)
		require.True(t, strings.Contains(string(cli), "`"+v.name+"`"), "docs/cli.md does not document %s", v.name)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	for _, p := range append(pages, filepath.Join(root, "README.md")) {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		for _, m := range regexp.MustCompile(`AIUSAGE_[A-Z_]*[A-Z]`).FindAllString(string(b), -1) {
			require.Contains(t, names, m, "%s names %s, which the command line does not read", p, m)
		}
	}
}
