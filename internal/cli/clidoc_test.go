package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cliReferencePath is docs/cli.md, relative to this package's directory.
var cliReferencePath = filepath.Join("..", "..", "docs", "cli.md")

// TestCLIReference checks that docs/cli.md is what WriteCLIReference writes;
// with -update (the flag of cli_test.go) it rewrites the file first.
func TestCLIReference(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, WriteCLIReference(&b))
	got := b.String()

	require.True(t, strings.HasPrefix(got, "<!-- Code generated "), "the reference starts with a generated-file comment")
	require.Contains(t, got, cliReferenceRegenerate)

	// Every runnable command has its section, with its help in a text block;
	// no group command has one.
	var sections []string
	walk(root(), nil, func(path []string, c *command) {
		full := append([]string{"aiusage"}, path...)
		heading := "\n## " + strings.Join(full, " ") + "\n"
		if c.run == nil {
			require.NotContains(t, got, heading, "group command %v has a section", full)
			return
		}
		sections = append(sections, heading)
		var help bytes.Buffer
		writeHelp(&help, c, full)
		require.Contains(t, got, heading+"\n```text\n"+help.String()+"```\n", "section of %v", full)
		require.Contains(t, got, "- ["+strings.Join(full, " ")+"](#"+strings.Join(full, "-")+"): "+markdownEscaper.Replace(c.summary)+"\n", "table of contents entry of %v", full)
	})
	require.NotEmpty(t, sections)
	// The sections are in tree order, and there are no others.
	last := -1
	for _, h := range sections {
		i := strings.Index(got, h)
		require.Greater(t, i, last, "section %q out of tree order", strings.TrimSpace(h))
		last = i
	}
	require.Equal(t, len(sections), strings.Count(got, "\n## aiusage"), "sections other than the runnable commands")
	// The environment variables, every one of the list, with its flag.
	require.Contains(t, got, "\n## Environment variables\n")
	for _, v := range environment {
		flagName := "`--" + v.flag + "`"
		if v.flag == "" {
			flagName = "none"
		}
		require.Contains(t, got, "| `"+v.name+"` | "+flagName+" |")
	}

	if *update {
		require.NoError(t, os.WriteFile(cliReferencePath, []byte(got), 0o644))
	}
	want, err := os.ReadFile(cliReferencePath)
	require.NoError(t, err, "run %s to create it", cliReferencePath)
	require.Equal(t, string(want), got, "%s differs from the command tree; run %s", cliReferencePath, cliReferenceRegenerate)
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestCLIReferenceWriteError(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, WriteCLIReference(failingWriter{}), os.ErrClosed)
}
