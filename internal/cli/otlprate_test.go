package cli

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/telemetry"
)

// TestOTLPRateFlags: the rate limit's flags refuse what is not a rate or a
// burst, from the command line and the environment, before anything
// starts; 0 turns the limit off, and the defaults are the endpoint's.
func TestOTLPRateFlags(t *testing.T) {
	t.Parallel()
	db := "sqlite:" + filepath.Join(t.TempDir(), "s.db")
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--otlp-rate", "-1"}, nil, "flag -otlp-rate: must be"},
		{[]string{"--otlp-rate", "NaN"}, nil, "flag -otlp-rate: must be"},
		{[]string{"--otlp-burst", "0"}, nil, "flag -otlp-burst: must be"},
		{nil, map[string]string{"AIUSAGE_OTLP_BURST": "many"}, "otlp-burst"},
		{nil, map[string]string{"AIUSAGE_OTLP_RATE": "+Inf"}, "otlp-rate"},
	} {
		env := map[string]string{"AIUSAGE_DATABASE_URL": db}
		for k, v := range c.env {
			env[k] = v
		}
		r := runCLI(t, "", env, append([]string{"service", "serve", "--addr", "127.0.0.1:0"}, c.args...)...)
		require.Equal(t, ExitUsage, r.code, "%v %v: %s", c.args, c.env, r.stderr)
		require.Contains(t, r.stderr, c.want)
	}

	var f otlpRateFlags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f.register(fs)
	require.Equal(t, telemetry.Config{RatePerKey: telemetry.DefaultRatePerKey, RateBurst: telemetry.DefaultRateBurst}, f.config())
	require.NoError(t, fs.Parse([]string{"--otlp-rate", "0", "--otlp-burst", "7"}))
	require.Equal(t, telemetry.Config{RatePerKey: -1, RateBurst: 7}, f.config())
	require.NoError(t, fs.Parse([]string{"--otlp-rate", "2.5"}))
	require.Equal(t, 2.5, f.config().RatePerKey)
}
