package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/conformance"
)

// The embedding section of docs/provider.md, whose Go block is this program.
const (
	docFile    = "../../docs/provider.md"
	docSection = "# Embedding the provider in your Go application"
)

// TestDocSnippetIsThisProgram requires the fenced Go block of the embedding
// section of docs/provider.md to be main.go byte for byte, so that what a
// newcomer pastes is what TestConformance checks.
func TestDocSnippetIsThisProgram(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(docFile)
	require.NoError(t, err)
	snippet, err := goBlock(string(doc), docSection)
	require.NoError(t, err)
	program, err := os.ReadFile("main.go")
	require.NoError(t, err)
	require.Equal(t, string(program), snippet,
		"the Go block of docs/provider.md %q differs from examples/embed/main.go: change both together", docSection)
}

// goBlock returns the body of the first ```go block of the Markdown
// section headed by heading, up to the next heading of the same or a higher
// level (lines of fenced code blocks, such as shell comments, are not
// headings).
func goBlock(markdown, heading string) (string, error) {
	var section string
	if strings.HasPrefix(markdown, heading+"\n") {
		section = markdown[len(heading):]
	} else if _, rest, ok := strings.Cut(markdown, "\n"+heading+"\n"); ok {
		section = "\n" + rest
	} else {
		return "", fmt.Errorf("no section %q", heading)
	}
	level := len(heading) - len(strings.TrimLeft(heading, "#"))
	fenced, offset := false, 0
	for _, line := range strings.SplitAfter(section, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		} else if !fenced && offset > 0 && isHeadingUpTo(line, level) {
			section = section[:offset]
			break
		}
		offset += len(line)
	}
	_, block, ok := strings.Cut(section, "\n```go\n")
	if !ok {
		return "", fmt.Errorf("section %q has no ```go block", heading)
	}
	block, _, ok = strings.Cut(block, "\n```\n")
	if !ok {
		return "", fmt.Errorf("the ```go block of section %q is not closed", heading)
	}
	return block + "\n", nil
}

// isHeadingUpTo reports whether line is a Markdown heading of level 1 to level.
func isHeadingUpTo(line string, level int) bool {
	hashes := len(line) - len(strings.TrimLeft(line, "#"))
	return hashes >= 1 && hashes <= level && strings.HasPrefix(line[hashes:], " ")
}

// TestConformance builds this program as a newcomer would run it, starts it
// on a free port of 127.0.0.1 with its tokens in the environment, and runs
// the conformance suite against it, every check a subtest.
//
// The program has one customer, acme, and no token without read:usage (its
// second token reads usage only): the suite skips AUTH-03 and AUTH-07, and
// AUTH-04 checks only that a cursor replayed without credentials is refused.
func TestConformance(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	const full, usageOnly = "embed-full", "embed-usage"
	base := startProgram(t, "PROVIDER_ADDR=127.0.0.1:0", "PROVIDER_TOKEN="+full, "PROVIDER_USAGE_TOKEN="+usageOnly)

	conformance.Test(t, conformance.Config{BaseURL: base, Token: full, MaxRate: 5000})

	// The program's second token shares usage metrics without conversation
	// content.
	require.Equal(t, http.StatusOK, status(t, base+"/usage", usageOnly))
	require.Equal(t, http.StatusForbidden, status(t, base+"/conversations", usageOnly))
}

// startProgram builds main.go into a temporary directory, runs it with env
// added to the test's environment until the test ends, and returns the base
// URL it logs.
func startProgram(t *testing.T, env ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "embed")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = w
	err = cmd.Start()
	_ = w.Close() // the program holds its own copy
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = r.Close()
	})

	// The program logs "serving http://ADDR/aiusage/" once it listens.
	serving := regexp.MustCompile(`serving (http://\S+)/$`)
	found := make(chan string, 1)
	stopped := make(chan string, 1)
	go func() {
		var logged strings.Builder
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
			logged.WriteString(sc.Text() + "\n")
		}
		stopped <- logged.String()
	}()
	select {
	case base := <-found:
		return base
	case logged := <-stopped:
		t.Fatalf("the program stopped before serving:\n%s", logged)
	case <-time.After(30 * time.Second):
		t.Fatal("the program did not log its address within 30 s")
	}
	return ""
}

func status(t *testing.T, url, token string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}
