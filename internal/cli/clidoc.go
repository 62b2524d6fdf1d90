package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// cliReferenceRegenerate is the command that rewrites docs/cli.md.
const cliReferenceRegenerate = "go test ./internal/cli -run TestCLIReference -update"

// WriteCLIReference writes to w the Markdown reference of the aiusage command
// line, the content of docs/cli.md: a generated-file comment, a short
// introduction, a table of contents, then one section per runnable command of
// the tree, in tree order (depth first, subcommands in the order they are
// declared), headed "## aiusage admin key create" and so on. The body of each
// section is the command's help exactly as "aiusage help COMMAND..." prints
// it, in a fenced text block. It returns the error of writing to w, if any.
func WriteCLIReference(w io.Writer) error {
	type leaf struct {
		c    *command
		path []string
	}
	var leaves []leaf
	var visit func(c *command, path []string)
	visit = func(c *command, path []string) {
		if c.run != nil {
			leaves = append(leaves, leaf{c, path})
		}
		for _, s := range c.subs {
			visit(s, append(append([]string(nil), path...), s.name))
		}
	}
	r := root()
	visit(r, []string{r.name})

	var b bytes.Buffer
	fmt.Fprintf(&b, "<!-- Code generated from the command tree of internal/cli. DO NOT EDIT.\n     Regenerate with: %s -->\n\n", cliReferenceRegenerate)
	fmt.Fprintf(&b, "# The aiusage command line\n\n")
	fmt.Fprintf(&b, "This is the help of every %s command, as `%s help COMMAND...` or `COMMAND --help` prints it.\n", r.name, r.name)
	fmt.Fprintf(&b, "`make build` builds the binary into `bin/%s`; `go install ./cmd/%s`, run in the clone, installs it in `$(go env GOPATH)/bin`.\n", r.name, r.name)
	fmt.Fprintf(&b, "A flag shown with `[$VARIABLE]` reads that environment variable when it is not given on the command line;\n")
	fmt.Fprintf(&b, "the command line wins. The [environment variables](#environment-variables) listed below are the only ones read.\n\n")
	fmt.Fprintf(&b, "## Commands\n\n")
	for _, l := range leaves {
		title := strings.Join(l.path, " ")
		fmt.Fprintf(&b, "- [%s](#%s): %s\n", title, strings.Join(l.path, "-"), markdownEscaper.Replace(l.c.summary))
	}
	writeEnvironment(&b, r)
	for _, l := range leaves {
		var help bytes.Buffer
		writeHelp(&help, l.c, l.path)
		text := help.String()
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		fence := codeFence(text)
		fmt.Fprintf(&b, "\n## %s\n\n%stext\n%s%s\n", strings.Join(l.path, " "), fence, text, fence)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeEnvironment writes the section of the environment variables: one
// row per variable of [environment], in its order.
func writeEnvironment(b *bytes.Buffer, r *command) {
	fmt.Fprintf(b, "\n## Environment variables\n\n")
	fmt.Fprintf(b, "Settings that stay the same from run to run, and credentials, so that they need not be on a command line.\n")
	fmt.Fprintf(b, "No variable is both a credential a command sends and one a server accepts.\n\n")
	fmt.Fprintf(b, "| variable | flag | commands | kind | holds |\n|---|---|---|---|---|\n")
	for _, v := range environment {
		var cmds []string
		for _, c := range v.commands {
			name := "`" + r.name + " " + c + "`"
			if findPath(r, strings.Fields(c)).run == nil {
				name = "every " + name + " command"
			}
			cmds = append(cmds, name)
		}
		flagName := "none"
		if v.flag != "" {
			flagName = "`--" + v.flag + "`"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", v.name, flagName, strings.Join(cmds, ", "), v.role, markdownEscaper.Replace(v.doc))
	}
}

// findPath returns the command at path under c, or nil.
func findPath(c *command, path []string) *command {
	for _, name := range path {
		var next *command
		for _, s := range c.subs {
			if s.name == name {
				next = s
			}
		}
		if next == nil {
			return nil
		}
		c = next
	}
	return c
}

// markdownEscaper escapes the characters that Markdown could take for markup
// in a line of plain text.
var markdownEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`, `<`, `\<`, `>`, `\>`, `|`, `\|`,
)

// codeFence returns a backtick fence, at least three long, longer than any run
// of backticks in text, so that text cannot close the fenced block.
func codeFence(text string) string {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}
