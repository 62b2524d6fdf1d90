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

// readmeSection is the README section whose Go block is this program.
const readmeSection = "## Embedding the provider in your Go application"

// TestReadmeSnippetIsThisProgram requires the fenced Go block of the README's
// embedding section to be main.go byte for byte, so that what a newcomer
// pastes is what TestConformance checks.
func TestReadmeSnippetIsThisProgram(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	snippet, err := goBlock(string(readme), readmeSection)
	require.NoError(t, err)
	program, err := os.ReadFile("main.go")
	require.NoError(t, err)
	require.Equal(t, string(program), snippet,
		"the Go block of README.md %q differs from examples/embed/main.go: change both together", readmeSection)
}

// goBlock returns the body of the first ```go block of the Markdown
// section headed by heading, up to the next heading of the same level.
func goBlock(markdown, heading string) (string, error) {
	_, section, ok := strings.Cut(markdown, "\n"+heading+"\n")
	if !ok {
		return "", fmt.Errorf("no section %q", heading)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end+1]
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
	base := startProgram(t, "AIUSAGE_ADDR=127.0.0.1:0", "AIUSAGE_TOKEN="+full, "AIUSAGE_USAGE_TOKEN="+usageOnly)

	conformance.Test(t, conformance.Config{BaseURL: base, Token: full, MaxRate: 5000})

	// The README's second token shares usage metrics without conversation
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
