package docs

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/keyring"
)

// TestServiceKeys checks that docs/service.md's commands make an
// AIUSAGE_SECRET_KEY the service accepts (the line, run by sh, gives keys
// that keyring.ParseKeys reads, as the service does) and create the
// organisation's API key that reads the collected data.
func TestServiceKeys(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("the line runs openssl")
	}
	var export, create string
	for _, l := range shellLines(t, "service.md") {
		if strings.HasPrefix(l, "export AIUSAGE_SECRET_KEY=") {
			export = l
		}
		if regexp.MustCompile(`^aiusage admin key create --org "\$ORG" .*--type API\b`).MatchString(l) {
			create = l
		}
	}
	require.NotEmpty(t, export, "service.md sets AIUSAGE_SECRET_KEY")
	out, err := exec.Command("sh", "-c", export+"\nprintf %s \"$AIUSAGE_SECRET_KEY\"").CombinedOutput()
	require.NoError(t, err, "%s: %s", export, out)
	_, err = keyring.ParseKeys(string(out))
	require.NoError(t, err, "the AIUSAGE_SECRET_KEY of service.md: %q", out)
	require.NotEmpty(t, create, "service.md creates the organisation's API key")
}

// TestSecurityMetricsSnippet checks that the /metrics snippet of
// docs/security.md gives its token to the service and to curl both (an
// export, not a prefix of the server's command alone) and runs the service
// in the background, so that the next command runs.
func TestSecurityMetricsSnippet(t *testing.T) {
	lines := shellLines(t, "security.md")
	exported, background, curl := -1, -1, -1
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "export AIUSAGE_METRICS_TOKEN="):
			exported = i
		case strings.HasPrefix(l, "aiusage service serve --metrics-addr") && strings.HasSuffix(l, "&"):
			background = i
		case strings.Contains(l, `curl -H "Authorization: Bearer $AIUSAGE_METRICS_TOKEN"`):
			curl = i
		}
	}
	require.NotEqual(t, -1, exported, "the token is exported")
	require.NotEqual(t, -1, background, "the service runs in the background")
	require.NotEqual(t, -1, curl)
	require.Less(t, exported, background)
	require.Less(t, background, curl)
}

// TestPushSecretStorage checks that docs/push.md says the push secret is
// stored encrypted, as it is, never in plain text.
func TestPushSecretStorage(t *testing.T) {
	src, err := os.ReadFile("push.md")
	require.NoError(t, err)
	require.NotRegexp(t, `(?i)plain ?text|in the clear|unencrypted`, string(src))
	require.Contains(t, strings.Join(strings.Fields(string(src)), " "), "shown once when the source is added and stored encrypted ([security](security.md#secrets-at-rest))")
}
