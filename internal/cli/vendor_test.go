package cli

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer/vendorusage/vendortest"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// fillVendorFake gives a vendor fake two persons, an hour of usage each of
// the last three days, and a day's cost.
func fillVendorFake(f *vendortest.Server, now time.Time) {
	f.AddUser("user_ann", "Ann@Acme.test")
	h := now.UTC().Truncate(time.Hour)
	for d := range 3 {
		at := h.Add(-time.Duration(d*24+2) * time.Hour)
		f.AddUsage(vendortest.Usage{Hour: at, Model: "model-a", User: "user_ann", APIKey: "key_1", Project: "proj_1", Requests: 4,
			Uncached: 1000, CacheRead: 100, CacheWrite5m: 10, Output: 200},
			vendortest.Usage{Hour: at, Model: "model-b", Project: "proj_2", Requests: 1, Uncached: 7, Output: 3})
		f.AddCost(vendortest.Cost{Day: at, Project: "proj_1", LineItem: "model-a, input", Model: "model-a", USD: "0.123457"})
	}
}

// usageSums are the sums of usage buckets.
type usageSums struct {
	requests, input, output int64
	cost                    float64
	users                   []string
}

func (s *usageSums) add(b spec.UsageBucket) {
	s.requests += b.Metrics.Requests
	s.input += b.Metrics.InputTokens
	s.output += b.Metrics.OutputTokens
	s.cost += b.Metrics.Cost
	if b.Dimensions.UserID != nil && *b.Dimensions.UserID != "" {
		s.users = append(s.users, *b.Dimensions.UserID)
	}
}

func requireVendorTotals(t *testing.T, f *vendortest.Server, got usageSums) {
	t.Helper()
	want := f.Totals(time.Time{}, time.Time{})
	require.Equal(t, want.Requests, got.requests)
	require.Equal(t, want.Input, got.input)
	require.Equal(t, want.Output, got.output)
	require.InDelta(t, want.CostFloat(), got.cost, 1e-6)
	require.Contains(t, got.users, "ann@acme.test")
}

// TestAdminSourceVendor adds an OpenAI and an Anthropic source with the
// admin commands, lets 'service serve' sync them on its schedule, and reads
// the organisation's usage: the vendors' totals, persons as emails; the
// Admin keys are printed masked, never logged.
func TestAdminSourceVendor(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqldbtest.URL(t, d)
			fx := newFixture(t, dbURL)
			now := time.Now()
			oa, an := vendortest.NewOpenAI(), vendortest.NewAnthropic()
			t.Cleanup(oa.Close)
			t.Cleanup(an.Close)
			fillVendorFake(oa, now)
			fillVendorFake(an, now)

			var s adminSource
			r := admin(t, dbURL, open, "source", "add", "--org", fx.org.ID, "--name", "OpenAI", "--transport", "openai",
				"--token", oa.Key, "--url", oa.URL)
			require.Equal(t, ExitOK, r.code, r.stderr)
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &s))
			require.Equal(t, "openai", s.Transport)
			require.Equal(t, "1h0m0s", s.Every, "hourly by default")
			require.Equal(t, oa.URL, s.URL)
			require.Equal(t, "****"+oa.Key[len(oa.Key)-4:], s.Token)
			require.NotContains(t, r.stdout+r.stderr, oa.Key)
			r = admin(t, dbURL, open, "source", "add", "--org", fx.org.ID, "--name", "Anthropic", "--transport", "anthropic",
				"--token", an.Key, "--url", an.URL, "--every", "30m")
			require.Equal(t, ExitOK, r.code, r.stderr)
			// Without --url: the vendor's own address.
			var def adminSource
			r = admin(t, dbURL, open, "source", "add", "--org", fx.org.ID, "--name", "Default", "--transport", "anthropic", "--token", "sk-ant-admin-other")
			require.Equal(t, ExitOK, r.code, r.stderr)
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &def))
			require.Equal(t, "https://api.anthropic.com", def.URL)
			adminOK(t, dbURL, nil, "source", "remove", "--org", fx.org.ID, "--source", def.ID)
			// No key: a usage error naming it.
			r = admin(t, dbURL, open, "source", "add", "--org", fx.org.ID, "--name", "x", "--transport", "openai")
			require.Equal(t, ExitUsage, r.code, r.stderr)
			require.Contains(t, r.stderr, "--token")

			base, logs, _ := startService(t, serviceURLText, "--database-url", dbURL, "--allow-private-sources")
			var list struct {
				OrganisationID string        `json:"organisationId"`
				Sources        []adminSource `json:"sources"`
			}
			require.Eventually(t, func() bool {
				adminOK(t, dbURL, &list, "source", "list", "--org", fx.org.ID)
				for _, src := range list.Sources {
					u := src.Resources["usage"]
					if len(src.Resources) != 1 || u == nil || u["lastSuccess"] == nil || u["inProgress"] == true || u["records"] == 0.0 {
						return false
					}
					if w, _ := u["watermark"].(string); w < now.UTC().Truncate(time.Hour).Add(-3*time.Hour).Format(time.RFC3339) {
						return false
					}
				}
				return true
			}, 90*time.Second, 200*time.Millisecond, "the service syncs both sources: %s", logs)

			var got usageSums
			q := url.Values{"granularity": {"day"}, "groupBy": {"userId"}, "limit": {"1000"},
				"startAt": {now.UTC().AddDate(0, 0, -5).Format(time.RFC3339)}, "endAt": {now.UTC().AddDate(0, 0, 1).Format(time.RFC3339)}}
			status, body, _ := call(t, "GET", strings.TrimSuffix(base, "/")+"/organisations/"+fx.org.ID+"/usage?"+q.Encode(), fx.key.Secret, nil)
			require.Equal(t, 200, status, string(body))
			var page spec.List[spec.UsageBucket]
			require.NoError(t, json.Unmarshal(body, &page))
			for _, b := range page.Data {
				got.add(b)
			}
			wantO, wantA := oa.Totals(time.Time{}, time.Time{}), an.Totals(time.Time{}, time.Time{})
			require.Equal(t, wantO.Input+wantA.Input, got.input)
			require.Equal(t, wantO.Output+wantA.Output, got.output)
			require.Equal(t, wantO.Requests+wantA.Requests, got.requests)
			require.InDelta(t, wantO.CostFloat()+wantA.CostFloat(), got.cost, 1e-6)
			require.Contains(t, got.users, "ann@acme.test")
			require.NotContains(t, logs.String(), oa.Key)
			require.NotContains(t, logs.String(), an.Key)
		})
	}
}

// TestConsumerSyncVendor syncs an OpenAI and an Anthropic fake into a
// consumer store with 'consumer sync': its usage export adds up to the
// vendors' totals, and again after a revision; flags that the vendor source
// decides are refused.
func TestConsumerSyncVendor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		transport string
		fake      func() *vendortest.Server
	}{{"openai", vendortest.NewOpenAI}, {"anthropic", vendortest.NewAnthropic}} {
		t.Run(c.transport, func(t *testing.T) {
			t.Parallel()
			f := c.fake()
			t.Cleanup(f.Close)
			now := time.Now()
			fillVendorFake(f, now)
			store := "sqlite:" + filepath.Join(t.TempDir(), "c.db")
			sync := func() result {
				t.Helper()
				r := runCLI(t, "", nil, "consumer", "sync", "--database-url", store, "--source", c.transport, "--transport", c.transport,
					"--url", f.URL, "--token", f.Key, "--quiet")
				require.Equal(t, ExitOK, r.code, r.stderr)
				require.NotContains(t, r.stderr, f.Key)
				return r
			}
			export := func() usageSums {
				t.Helper()
				r := runCLI(t, "", nil, "consumer", "export", "--database-url", store, "--source", c.transport, "--resource", "usage")
				require.Equal(t, ExitOK, r.code, r.stderr)
				var s usageSums
				for line := range strings.Lines(r.stdout) {
					var b spec.UsageBucket
					require.NoError(t, json.Unmarshal([]byte(line), &b), line)
					require.Equal(t, spec.GranularityHour, b.Granularity)
					s.add(b)
				}
				return s
			}
			r := sync()
			require.Contains(t, r.stderr, "usage:")
			requireVendorTotals(t, f, export())

			f.Revise(now.Add(-2*time.Hour), vendortest.Usage{Model: "model-a", User: "user_ann", Requests: 2, Uncached: 5, Output: 5})
			sync()
			requireVendorTotals(t, f, export())

			for _, extra := range [][]string{{"--resources", "conversations"}, {"--usage-granularity", "day"}, {"--usage-group-by", "model"}} {
				r := runCLI(t, "", nil, append([]string{"consumer", "sync", "--database-url", store, "--source", "x", "--transport", c.transport,
					"--token", f.Key}, extra...)...)
				require.Equal(t, ExitUsage, r.code, "%v: %s", extra, r.stderr)
				require.Contains(t, r.stderr, extra[0])
			}
			r = runCLI(t, "", nil, "consumer", "sync", "--database-url", store, "--source", "x", "--transport", c.transport)
			require.Equal(t, ExitUsage, r.code, r.stderr)
			require.Contains(t, r.stderr, "--token is required")
		})
	}
}
