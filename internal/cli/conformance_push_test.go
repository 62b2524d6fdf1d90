package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/conformance"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

var pushAddrLine = regexp.MustCompile(`receiving pushes at (http://\S+) for`)

// TestConformancePush points 'aiusage provider push' at 'aiusage conformance
// push': the kit's pusher passes every check.
func TestConformancePush(t *testing.T) {
	t.Parallel()
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	_, _, stop := startServe(t, "--database-url", dbURL, "--token", "t", "--demo", "20")
	stop()

	stderr := &syncBuffer{}
	var stdout bytes.Buffer
	done := make(chan int, 1)
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: stderr, getenv: testGetenv(nil)}
	go func() {
		done <- run(context.Background(), e, []string{"conformance", "push", "--secret", pushTestSecret, "--for", "6s", "--format", "json"})
	}()
	var addr string
	require.Eventually(t, func() bool {
		m := pushAddrLine.FindStringSubmatch(stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 10*time.Second, 10*time.Millisecond)

	r := runCLI(t, "", nil, "provider", "push", "--database-url", dbURL, "--to", addr, "--secret", pushTestSecret)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 0, <-done, stderr.String())
	var rep conformance.Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	require.Len(t, rep.Results, len(conformance.PushCatalogue))
	for _, res := range rep.Results {
		require.Equal(t, conformance.StatusPass, res.Status, "%s: %s", res.ID, res.Message)
	}
}

func TestConformancePushUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--secret is required"},
		{[]string{"--secret", "whsec_x"}, "--secret: conformance: push secret"},
		{[]string{"--secret", pushTestSecret, "--format", "xml"}, "--format must be"},
		{[]string{"--secret", pushTestSecret, "--for", "0s"}, "--for must be positive"},
		{[]string{"--secret", pushTestSecret, "--listen", "256.0.0.1:1"}, "--listen"},
	} {
		r := runCLI(t, "", nil, append([]string{"conformance", "push"}, tc.args...)...)
		require.Equal(t, ExitUsage, r.code, tc.args)
		require.Contains(t, r.stderr, tc.want, tc.args)
	}
	// Nothing arrives: PUSH-01 fails the run.
	r := runCLI(t, "", nil, "conformance", "push", "--secret", pushTestSecret, "--for", "50ms", "--quiet")
	require.Equal(t, ExitFailure, r.code, r.stderr)
	require.Contains(t, r.stdout, "PUSH-01")
}
