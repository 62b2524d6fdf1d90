package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// buildBinary builds cmd/aiusage into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "aiusage")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/aiusage/kit/cmd/aiusage").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// demoRun is a running "aiusage demo" process and what it printed.
type demoRun struct {
	cmd       *exec.Cmd
	block     string
	commands  map[string]string // "1" .. "5" -> the command printed under "# N."
	stderr    *syncBuffer
	after     *syncBuffer // what it printed after the block
	accessLog string      // the --access-log file
	env       []string    // more environment of the commands sh runs
}

// startDemo starts the binary's demo, with extra flags, and reads its block
// up to the MCP configuration.
func startDemo(t *testing.T, bin, dbURL string, extra ...string) *demoRun {
	t.Helper()
	accessLog := filepath.Join(t.TempDir(), "access.log")
	cmd := exec.Command(bin, append([]string{"demo", "--addr", "127.0.0.1:0", "--database-url", dbURL, "--conversations", "60",
		"--access-log", accessLog, "--export-dir", filepath.Join(t.TempDir(), "export"), "--otlp-grpc-addr", "127.0.0.1:0"}, extra...)...)
	cmd.Env = append(os.Environ(), envMetricsToken+"="+testMetricsToken)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var b strings.Builder
	timeout := time.After(60 * time.Second)
	for done := false; !done; {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "demo exited before printing its block:\n%s", b.String())
			b.WriteString(l + "\n")
			done = strings.Contains(l, `"mcpServers"`)
		case <-timeout:
			t.Fatalf("no demo block within 60 s:\n%s", b.String())
		}
	}
	after := &syncBuffer{}
	go func() {
		for l := range lines {
			_, _ = after.Write([]byte(l + "\n"))
		}
	}()
	run := &demoRun{cmd: cmd, block: b.String(), commands: map[string]string{}, stderr: stderr, after: after, accessLog: accessLog}
	// A command is the lines after "# N." up to an empty line, joined
	// where they end in a backslash.
	re := regexp.MustCompile(`(?m)^  # ([0-9])\..*\n((?:  .*\n)+)`)
	for _, m := range re.FindAllStringSubmatch(run.block, -1) {
		cmdText := strings.ReplaceAll(m[2], "\\\n", " ")
		run.commands[m[1]] = strings.TrimSpace(cmdText)
	}
	require.Len(t, run.commands, 5, "commands in the block:\n%s", run.block)
	return run
}

func (d *demoRun) sh(t *testing.T, n string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-c", d.commands[n])
	c.Env = append(os.Environ(), d.env...)
	out, err := c.CombinedOutput()
	require.NoError(t, err, "command %s: %s\n%s", n, d.commands[n], out)
	return string(out)
}

func (d *demoRun) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, d.cmd.Wait())
}

// TestDemoEndToEnd starts the real binary's demo, runs the five printed
// commands, checks their answers, stops it, and starts it again on the same
// database: the same organisation and keys, nothing duplicated.
func TestDemoEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("the printed commands use curl")
	}
	bin := buildBinary(t)
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			var dbURL string
			if d == sqldb.SQLite {
				dbURL = "sqlite:" + filepath.Join(t.TempDir(), "demo.db")
			} else {
				dbURL = sqldbtest.URL(t, d)
			}
			demo := startDemo(t, bin, dbURL)

			var list struct {
				Items      []map[string]any `json:"items"`
				TotalCount int              `json:"totalCount"`
			}
			require.NoError(t, json.Unmarshal([]byte(demo.sh(t, "1")), &list))
			require.Equal(t, 5, list.TotalCount)

			var task struct {
				Status          string `json:"status"`
				RedactedRequest struct {
					Messages []struct{ Content string } `json:"messages"`
				} `json:"redactedRequest"`
			}
			require.NoError(t, json.Unmarshal([]byte(demo.sh(t, "2")), &task))
			require.Equal(t, "approved", task.Status)
			require.Len(t, task.RedactedRequest.Messages, 1)
			require.Equal(t, "Refund to IBAN [REDACTED] please", task.RedactedRequest.Messages[0].Content)

			var convs struct {
				Data    []map[string]any `json:"data"`
				HasMore bool             `json:"hasMore"`
			}
			require.NoError(t, json.Unmarshal([]byte(demo.sh(t, "3")), &convs), "%s", demo.commands["3"])
			require.NotEmpty(t, convs.Data)

			// The demo's generated data is a clean provider's: no failure,
			// and no warning either (an unknown enum value would be one).
			suite := demo.sh(t, "4")
			require.Contains(t, suite, "0 failed")
			require.Contains(t, suite, "0 warned")

			var cfg struct {
				MCPServers map[string]struct {
					Command string   `json:"command"`
					Args    []string `json:"args"`
				} `json:"mcpServers"`
			}
			require.NoError(t, json.Unmarshal([]byte(demo.commands["5"]), &cfg))
			require.Equal(t, bin, cfg.MCPServers["aiusage-demo"].Command)

			// The conformance suite on the collected view too, with the
			// organisation's key.
			m := regexp.MustCompile(`(http://[^ ]+)/organisations/([0-9a-f-]+)/sources/([0-9a-f-]+)/conversations`).FindStringSubmatch(demo.commands["3"])
			require.Len(t, m, 4, demo.commands["3"])
			key := regexp.MustCompile(`aiu_[0-9A-Za-z]+`).FindString(demo.commands["1"])
			out, err := exec.Command(bin, "conformance", "--url", m[1]+"/organisations/"+m[2]+"/sources/"+m[3], "--token", key).CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), "0 failed")
			require.Contains(t, string(out), "0 warned")

			checkDemoOneView(t, demo, m[1], m[2], key)
			checkDemoOperations(t, demo, m[1])

			// The dashboard: exactly one line says where and as whom to sign
			// in; both people can, and the review queue holds a task.
			dash := regexp.MustCompile(`(?m)^  dashboard      (http://127\.0\.0\.1:[0-9]+/)  \(sign in as (\S+) with password (\S+); reviewer: (\S+) / (\S+)\)$`).
				FindAllStringSubmatch(demo.block, -1)
			require.Len(t, dash, 1, demo.block)
			for _, who := range [][2]string{{dash[0][2], dash[0][3]}, {dash[0][4], dash[0][5]}} {
				jar := filepath.Join(t.TempDir(), "cookies")
				out, err := exec.Command("curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}", "-c", jar,
					"-H", "Origin: "+strings.TrimSuffix(dash[0][1], "/"), "--data-urlencode", "email="+who[0],
					"--data-urlencode", "password="+who[1], dash[0][1]+"signin").CombinedOutput()
				require.NoError(t, err, "%s", out)
				require.Equal(t, "303 "+dash[0][1], string(out), "sign in as %s", who[0])
				out, err = exec.Command("curl", "-s", "-f", "-b", jar, dash[0][1]+"review").CombinedOutput()
				require.NoError(t, err, "%s", out)
				require.Contains(t, string(out), "<mark>Project Falcon</mark>", "the demo's task waits in the queue")
			}

			// Telemetry of two tools, through the real endpoint.
			telemetry := checkDemoTelemetry(t, demo)

			demo.stop(t)
			require.Contains(t, demo.stderr.String(), "msg=stopped")
			again := startDemo(t, bin, dbURL)
			again.env = []string{"API_KEY=" + key}
			checkDemoTelemetryAgain(t, again, telemetry)
			port := regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)
			// The key's value and the passwords were printed at creation,
			// and are not printed again: the commands read the key from
			// $API_KEY, and a note says how to start afresh.
			require.NotContains(t, again.block, key, "a second start does not print the API key")
			require.NotContains(t, again.block, dash[0][3], "a second start does not print the passwords")
			require.NotContains(t, again.block, dash[0][5], "a second start does not print the passwords")
			require.Contains(t, again.block, "API key        printed at the first start")
			for n, c := range demo.commands {
				require.Equal(t, port.ReplaceAllString(strings.ReplaceAll(c, key, "$API_KEY"), "ADDR"), port.ReplaceAllString(again.commands[n], "ADDR"),
					"a second start reuses the organisation and keys")
			}
			require.NoError(t, json.Unmarshal([]byte(again.sh(t, "1")), &list))
			require.Equal(t, 5, list.TotalCount, "nothing duplicated")
			require.Equal(t, port.ReplaceAllString("  dashboard      "+dash[0][1]+"  (sign in as "+dash[0][2]+" or "+dash[0][4]+" with the password printed at the first start)", "ADDR"),
				port.ReplaceAllString(regexp.MustCompile(`(?m)^  dashboard  .*$`).FindString(again.block), "ADDR"),
				"a second start keeps the people, and says their passwords were printed at the first start")
			var afresh string
			require.Eventually(t, func() bool {
				m := regexp.MustCompile(`(?m)^To start afresh, with a new organisation, key and passwords: (.*)$`).FindStringSubmatch(again.after.String())
				if m == nil {
					return false
				}
				afresh = m[1]
				return true
			}, 10*time.Second, 50*time.Millisecond, "a second start says how to start afresh:\n%s", again.after.String())
			require.Contains(t, again.after.String(), "The API key and the passwords were printed when they were created, at the first start.")
			again.stop(t)
			if d != sqldb.SQLite {
				require.Equal(t, "stop the demo and start it with --database-url naming an empty database.", afresh)
				return
			}
			// On SQLite, the printed command starts afresh: a new key and
			// new passwords, printed.
			rm := regexp.MustCompile(`^stop the demo, run  (rm -rf .*)  and start it again\.$`).FindStringSubmatch(afresh)
			require.Len(t, rm, 2, afresh)
			require.Contains(t, rm[1], strings.TrimPrefix(dbURL, "sqlite:"))
			out, err = exec.Command("sh", "-c", rm[1]).CombinedOutput()
			require.NoError(t, err, "%s", out)
			fresh := startDemo(t, bin, dbURL)
			freshKey := regexp.MustCompile(`aiu_[0-9A-Za-z]+`).FindString(fresh.commands["1"])
			require.NotEmpty(t, freshKey, fresh.block)
			require.NotEqual(t, key, freshKey, "a new key")
			require.Contains(t, fresh.block, "API key        "+freshKey)
			require.Regexp(t, `(?m)^  dashboard      .*with password \S+; reviewer: `, fresh.block)
			fresh.stop(t)
		})
	}
}

// checkDemoOneView checks that the one view of the organisation orgID at
// base holds the data of the three sources, one per transport: REST, the
// scheduled export and the push stream.
func checkDemoOneView(t *testing.T, demo *demoRun, base, orgID, key string) {
	t.Helper()
	sourceIDs := regexp.MustCompile(`(?m)^  (?:source|export source|push source) +([0-9a-f-]{36})`).FindAllStringSubmatch(demo.block, -1)
	require.Len(t, sourceIDs, 3, demo.block)
	view := base + "/organisations/" + orgID + "/conversations?limit=200"
	require.Eventually(t, func() bool {
		out, err := exec.Command("curl", "-s", "-f", "-H", "X-API-Key: "+key, view).Output()
		if err != nil {
			return false
		}
		var page struct {
			Data []struct {
				SourceID string `json:"sourceId"`
			} `json:"data"`
		}
		if json.Unmarshal(out, &page) != nil {
			return false
		}
		seen := map[string]bool{}
		for _, r := range page.Data {
			seen[r.SourceID] = true
		}
		return len(seen) == 3 && seen[sourceIDs[0][1]] && seen[sourceIDs[1][1]] && seen[sourceIDs[2][1]]
	}, 60*time.Second, 250*time.Millisecond, "the one view shows all three sources")
}

// checkDemoOperations checks the operations endpoints at base and the
// access log the block names.
func checkDemoOperations(t *testing.T, demo *demoRun, base string) {
	t.Helper()
	for path, want := range map[string]string{"/healthz": `"ok"`, "/readyz": `"ready"`, "/metrics": "aiusage_http_requests_total"} {
		out, err := exec.Command("curl", "-s", "-f", "-H", "Authorization: Bearer "+testMetricsToken, base+path).CombinedOutput()
		require.NoError(t, err, "%s: %s", path, out)
		require.Contains(t, string(out), want, path)
	}
	// /metrics only with the operations token, as the block says.
	out, err := exec.Command("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", base+"/metrics").Output()
	require.NoError(t, err)
	require.Equal(t, "401", string(out))
	require.Contains(t, demo.block, "/metrics with Authorization: Bearer $"+envMetricsToken)

	// Requests and syncs are logged to the access log, which the
	// block names; the terminal keeps the block in view.
	require.Contains(t, demo.block, "  access log     "+demo.accessLog+"  (one line per request and per sync)\n")
	access, err := os.ReadFile(demo.accessLog)
	require.NoError(t, err)
	require.Contains(t, string(access), "msg=request")
	require.Contains(t, string(access), `msg="source synced"`)
	require.Contains(t, string(access), "path=/review-tasks")
	require.NotContains(t, demo.stderr.String(), "msg=request")
	require.NotContains(t, demo.stderr.String(), "source synced")
	require.Contains(t, demo.stderr.String(), `msg="demo serving"`)
}

// TestDemoOpenWebUI starts the demo with --openwebui-db on a missing file:
// it creates the Open WebUI sample there, serves it at /openwebui, adds it
// as a fourth source, syncs it, and prints where; the organisation's
// collected view then holds its chats as the example maps them.
func TestDemoOpenWebUI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("the test uses curl")
	}
	bin := buildBinary(t)
	webuiDB := filepath.Join(t.TempDir(), "webui.db")
	demo := startDemo(t, bin, "sqlite:"+filepath.Join(t.TempDir(), "demo.db"), "--openwebui-db", webuiDB)
	line := regexp.MustCompile(`(?m)^  Open WebUI     source ([0-9a-f-]{36})  \(the Open WebUI database (\S+), served read-only at$`)
	var m []string
	require.Eventually(t, func() bool {
		m = line.FindStringSubmatch(demo.after.String())
		return m != nil
	}, 60*time.Second, 100*time.Millisecond, "the demo prints the Open WebUI source:\n%s\n%s", demo.after.String(), demo.stderr.String())
	require.Equal(t, webuiDB, m[2])
	require.FileExists(t, webuiDB, "the sample is created")
	require.Contains(t, demo.block, "(all four sources, each record naming its own)")

	view := regexp.MustCompile(`(http://[^ ]+)/organisations/([0-9a-f-]+)/sources/`).FindStringSubmatch(demo.commands["3"])
	require.Len(t, view, 3, demo.commands["3"])
	key := regexp.MustCompile(`aiu_[0-9A-Za-z]+`).FindString(demo.commands["1"])
	out, err := exec.Command("curl", "-s", "-f", "-H", "X-API-Key: "+key,
		view[1]+"/organisations/"+view[2]+"/sources/"+m[1]+"/conversations/chat-branches").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var c struct {
		Messages []struct{ ID string }  `json:"messages"`
		User     struct{ Email string } `json:"user"`
	}
	require.NoError(t, json.Unmarshal(out, &c), "%s", out)
	require.Len(t, c.Messages, 4, "the served branch of the sample's regenerated chat")
	require.Equal(t, "bob@example.com", c.User.Email)
	demo.stop(t)
}
