package conformance

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// catalogueDocPath is the generated document, relative to this package.
var catalogueDocPath = filepath.Join("..", "docs", "conformance.md")

// TestCatalogueMarkdown keeps docs/conformance.md equal to what
// WriteCatalogueMarkdown writes; -update (the flag of report_test.go)
// rewrites it.
func TestCatalogueMarkdown(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, WriteCatalogueMarkdown(&b))
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(catalogueDocPath), 0o755))
		require.NoError(t, os.WriteFile(catalogueDocPath, b.Bytes(), 0o644))
	}
	want, err := os.ReadFile(catalogueDocPath)
	require.NoError(t, err, "run go test ./conformance -run TestCatalogueMarkdown -update")
	require.Equal(t, string(want), b.String(), "%s is stale; regenerate it with go test ./conformance -run TestCatalogueMarkdown -update", catalogueDocPath)
}

// catalogueForbidden are what a reference to a text outside the
// repository looks like: the team's design notes by name, or any path
// leading out of the directory it starts from. Users' clones have only the
// repository, so neither the catalogue nor the documents generated from it
// may refer to anything else (the docs' links test checks the paths that
// stay inside).
var catalogueForbidden = []string{"DESIGN.md", "CONFORMANCE.md", "STYLE.md", "../"}

func TestCatalogueEntries(t *testing.T) {
	t.Parallel()
	idRE := regexp.MustCompile(`^([A-Z]+)-[0-9]{2}$`)
	var prefixes []string
	for _, f := range catalogueFamilies {
		prefixes = append(prefixes, f.Prefix)
	}
	seen := map[string]bool{}
	var order []string // family prefixes in catalogue order, each once
	for _, c := range Catalogue {
		require.Regexp(t, idRE, c.ID, "ids are FAMILY-NN")
		require.False(t, seen[c.ID], "id %s appears twice", c.ID)
		seen[c.ID] = true
		fam := checkFamily(c.ID)
		require.Contains(t, prefixes, fam, "%s: its family has no heading in catalogueFamilies", c.ID)
		if len(order) == 0 || order[len(order)-1] != fam {
			require.NotContains(t, order, fam, "%s: the checks of a family are together in the catalogue", c.ID)
			order = append(order, fam)
		}
		require.Contains(t, []Level{LevelMust, LevelShould, LevelInfo}, c.Level, c.ID)
		for name, v := range map[string]string{"Title": c.Title, "Sends": c.Sends, "Requires": c.Requires, "Rule": c.Rule} {
			require.NotEmpty(t, strings.TrimSpace(v), "%s: %s is empty", c.ID, name)
			require.Equal(t, strings.Join(strings.Fields(v), " "), v, "%s: %s has stray spaces", c.ID, name)
			for _, bad := range catalogueForbidden {
				require.NotContains(t, v, bad, "%s: %s refers to a text users do not have", c.ID, name)
			}
		}
		require.False(t, strings.HasSuffix(c.Title, "."), "%s: a title is not a sentence", c.ID)
		for name, v := range map[string]string{"Sends": c.Sends, "Requires": c.Requires} {
			require.True(t, strings.HasSuffix(v, "."), "%s: %s ends a sentence", c.ID, name)
		}
		// A rule quotes the specification or labels the kit's decision.
		require.True(t, strings.HasPrefix(c.Rule, `"`) || strings.HasPrefix(c.Rule, "Kit decision: "),
			"%s: the rule starts with a quoted sentence of the specification or with \"Kit decision: \"", c.ID)
		require.Zero(t, strings.Count(c.Rule, `"`)%2, "%s: the rule's quotes are balanced", c.ID)
		require.LessOrEqual(t, strings.Count(c.Rule, "Kit decision:"), 1, c.ID)
	}
	require.Equal(t, prefixes, order, "catalogueFamilies lists the families in catalogue order, each with checks")
	for _, f := range catalogueFamilies {
		for _, v := range []string{f.Name, f.Intro} {
			require.NotEmpty(t, v, f.Prefix)
			for _, bad := range catalogueForbidden {
				require.NotContains(t, v, bad, f.Prefix)
			}
		}
	}
	// The generated texts, prose included.
	var md, text bytes.Buffer
	require.NoError(t, WriteCatalogueMarkdown(&md))
	require.NoError(t, WriteCatalogueText(&text))
	for _, out := range []string{md.String(), text.String()} {
		for _, bad := range catalogueForbidden {
			require.NotContains(t, out, bad, "the generated catalogue refers to a text users do not have")
		}
	}
	for _, c := range Catalogue {
		require.Contains(t, md.String(), "\n#### "+c.ID+"\n", "the document has a section for %s", c.ID)
	}
}

func TestCatalogueText(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, WriteCatalogueText(&b))
	out := b.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i, line := range lines {
		require.LessOrEqual(t, utf8.RuneCountInString(line), 110, "line %d is too long: %q", i+1, line)
		require.Equal(t, strings.TrimRight(line, " "), line, "line %d has trailing spaces", i+1)
	}
	for _, c := range Catalogue {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, c.ID+" ") })
		require.GreaterOrEqual(t, i, 0, "%s is listed", c.ID)
		require.Contains(t, lines[i], string(c.Level), c.ID)
		require.Contains(t, lines[i], c.Title, c.ID)
		// The check's block runs to the next blank line: a labelled line for
		// each field, in order, and indented continuation lines.
		block := lines[i+1:]
		if k := slices.Index(block, ""); k >= 0 {
			block = block[:k]
		}
		var labels []string
		for _, l := range block {
			require.True(t, strings.HasPrefix(l, "    "), "%s: %q is indented", c.ID, l)
			if l[4] != ' ' {
				labels = append(labels, strings.Fields(l)[0])
			}
		}
		require.Equal(t, []string{"sends:", "requires:", "rule:"}, labels, c.ID)
		// Wrapping loses no word.
		var got, want []string
		for _, l := range block {
			got = append(got, strings.Fields(l)...)
		}
		for _, f := range [][2]string{{"sends:", c.Sends}, {"requires:", c.Requires}, {"rule:", c.Rule}} {
			want = append(append(want, f[0]), strings.Fields(f[1])...)
		}
		require.Equal(t, want, got, c.ID)
	}
}

func TestWrapWords(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{""}, wrapWords("", 10))
	require.Equal(t, []string{"a b", "c"}, wrapWords("a b c", 3))
	require.Equal(t, []string{"abcdefgh", "a"}, wrapWords("abcdefgh a", 4), "a long word gets its own line")
	require.Equal(t, []string{"é é", "é"}, wrapWords("é é é", 3), "widths count characters, not bytes")
}

// TestExportCatalogueEntries holds the export checks to the rules of the
// interface's: ids EXP-NN in order, a level, sentences, and a rule that
// quotes the specification or labels the kit's decision.
func TestExportCatalogueEntries(t *testing.T) {
	t.Parallel()
	for i, c := range ExportCatalogue {
		require.Equal(t, fmt.Sprintf("EXP-%02d", i+1), c.ID, "export checks are numbered in order")
		require.Contains(t, []Level{LevelMust, LevelShould, LevelInfo}, c.Level, c.ID)
		for name, v := range map[string]string{"Title": c.Title, "Sends": c.Sends, "Requires": c.Requires, "Rule": c.Rule} {
			require.NotEmpty(t, strings.TrimSpace(v), "%s: %s is empty", c.ID, name)
			require.Equal(t, strings.Join(strings.Fields(v), " "), v, "%s: %s has stray spaces", c.ID, name)
			for _, bad := range catalogueForbidden {
				require.NotContains(t, v, bad, "%s: %s refers to a text users do not have", c.ID, name)
			}
		}
		require.False(t, strings.HasSuffix(c.Title, "."), "%s: a title is not a sentence", c.ID)
		require.True(t, strings.HasSuffix(c.Sends, ".") && strings.HasSuffix(c.Requires, "."), c.ID)
		require.True(t, strings.HasPrefix(c.Rule, `"`) || strings.HasPrefix(c.Rule, "Kit decision: "), c.ID)
		require.Zero(t, strings.Count(c.Rule, `"`)%2, "%s: the rule's quotes are balanced", c.ID)
		for _, r := range Catalogue {
			require.NotEqual(t, r.ID, c.ID)
		}
	}
	var b strings.Builder
	require.NoError(t, WriteExportCatalogueText(&b))
	for _, c := range ExportCatalogue {
		require.Contains(t, b.String(), c.ID)
	}
}
