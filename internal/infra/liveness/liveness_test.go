package liveness

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMain makes the test binary the child process of TestGone when
// LIVENESS_CHILD is set: it runs until its standard input closes.
func TestMain(m *testing.M) {
	if os.Getenv("LIVENESS_CHILD") != "" {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func needPidSpace(t *testing.T) string {
	t.Helper()
	tag := pidSpace()
	if tag == "" {
		t.Skip("no boot id or pid namespace to read: no name is ever judged gone here")
	}
	return tag
}

func TestName(t *testing.T) {
	tag := needPidSpace(t)
	host, err := os.Hostname()
	require.NoError(t, err)
	n := Name("push:")
	want := "push:" + host + ":" + strconv.Itoa(os.Getpid()) + ":" + tag + "."
	require.True(t, strings.HasPrefix(n, want), "%s does not start with %s", n, want)
	require.Len(t, strings.TrimPrefix(n, want), 8, "4 random bytes in hex")
	require.NotEqual(t, n, Name("push:"), "two names of one process differ")
	require.False(t, Gone("push:", n), "this very process is never gone")
	require.False(t, Gone("", Name("")), "this very process is never gone")
}

// TestGone starts a child process, names it, and asks about it while it
// runs and after it has ended.
func TestGone(t *testing.T) {
	tag := needPidSpace(t)
	host, err := os.Hostname()
	require.NoError(t, err)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "LIVENESS_CHILD=1")
	stdin, err := child.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	pid := child.Process.Pid

	for _, prefix := range []string{"", "push:"} {
		require.False(t, Gone(prefix, name(prefix, host, pid, tag, "0a1b2c3d")), "%q: a running process is not gone", prefix)
	}
	require.NoError(t, stdin.Close())
	require.NoError(t, child.Wait())
	for _, prefix := range []string{"", "push:"} {
		require.True(t, Gone(prefix, name(prefix, host, pid, tag, "0a1b2c3d")), "%q: an ended process is gone", prefix)
	}

	// Names of the ended process that cannot be trusted are never judged
	// gone: their holder's lease has to expire.
	for _, id := range []string{
		name("", host, pid, "", "0a1b2c3d"),               // no pid space
		name("", host, pid, "0123456789ab", "0a1b2c3d"),   // another pid space
		name("", host+"-other", pid, tag, "0a1b2c3d"),     // another host
		name("push:", host, pid, tag, "0a1b2c3d"),         // another prefix
		name("", host, 0, tag, "0a1b2c3d"),                // no pid
		name("", host, os.Getpid(), tag, "0a1b2c3d"),      // this process
		host + ":" + strconv.Itoa(pid),                    // no suffix
		strconv.Itoa(pid) + ":" + tag + ".0a1b2c3d",       // no host
		host + ":x" + strconv.Itoa(pid) + ":" + tag + ".", // not a pid
		"",
	} {
		require.False(t, Gone("", id), "%q", id)
	}
	require.False(t, Gone("push:", name("", host, pid, tag, "0a1b2c3d")), "a name without the prefix")
}
