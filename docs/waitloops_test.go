package docs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// shellLines returns the lines of the sh code blocks of the Markdown file
// path.
func shellLines(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	var lines []string
	in := false
	for _, l := range strings.Split(string(src), "\n") {
		switch {
		case !in && (l == "```sh" || l == "```bash"):
			in = true
		case in && strings.HasPrefix(l, "```"):
			in = false
		case in:
			lines = append(lines, l)
		}
	}
	return lines
}

// waitLoopRE is a wait loop of the docs: at most N tries, and it stops
// when the process it waits for ($SERVER, $LISTENER) has exited.
var waitLoopRE = regexp.MustCompile(`^for i in \$\(seq [0-9]+\); do grep -qs .* && break; kill -0 \$([A-Z]+) 2>/dev/null \|\| break; sleep [0-9.]+; done$`)

// TestWaitLoops checks that no shell block of README.md and docs/*.md waits
// without a bound (an until or while loop), and runs each bounded wait loop,
// with the line after it, against a process that exited without getting
// ready, as a service does when its port is taken: the loop ends at once
// and says that it did not start.
func TestWaitLoops(t *testing.T) {
	files, err := filepath.Glob("*.md")
	require.NoError(t, err)
	files = append([]string{filepath.Join(repoRoot, "README.md")}, files...)
	loops := 0
	for _, f := range files {
		lines := shellLines(t, f)
		for i, l := range lines {
			require.NotRegexp(t, `(^|[;&|]\s*)(until|while)\s`, l, "%s: a wait loop without a bound", f)
			m := waitLoopRE.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			loops++
			require.Less(t, i+1, len(lines), "%s: the wait loop %q has no line after it", f, l)
			dir := t.TempDir()
			// The process waited for has already exited, its log (the file the
			// loop reads) saying why.
			logFile := "serve.log"
			if lm := regexp.MustCompile(`"\$W/([A-Za-z0-9_.-]+\.log)"`).FindStringSubmatch(l); lm != nil {
				logFile = lm[1]
			}
			script := "W=" + dir + "\nADDR=127.0.0.1:8080\n" +
				"echo 'listen tcp 127.0.0.1:8080: bind: address already in use' > $W/" + logFile + "\n" +
				"true & " + m[1] + "=$!; wait $" + m[1] + "\n" + l + "\n" + lines[i+1] + "\n"
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			start := time.Now()
			out, err := exec.CommandContext(ctx, "sh", "-c", script).CombinedOutput()
			cancel()
			require.NoError(t, err, "%s: %s\n%s", f, l, out)
			require.Less(t, time.Since(start), 3*time.Second, "%s: the loop stops when the process has exited", f)
			require.Contains(t, string(out), "address already in use", "%s: the log is shown", f)
			require.Regexp(t, `did not start`, string(out), "%s: a message says it did not start", f)
		}
	}
	require.GreaterOrEqual(t, loops, 3, "the wait loops of organisation-api.md and review-tasks.md")
}
