package conformance_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/conformance"
	"github.com/aiusage/kit/internal/testkit/race"
)

// These tests prove that the suite works: the reference provider of
// refprovider_test.go passes every check, and each deliberately broken
// variant of it is caught by the check meant for its defect and by no
// unrelated MUST check.

func refConfig(url string) conformance.Config {
	return conformance.Config{
		BaseURL:          url,
		Token:            refToken,
		UsagelessToken:   refUsageless,
		OtherTenantToken: refOtherToken,
		MaxRate:          1000,
		RequestTimeout:   10 * time.Second,
	}
}

func runRef(t *testing.T, d defect) *conformance.Report {
	t.Helper()
	srv := httptest.NewServer(newRefProvider(d))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	rep, err := conformance.Run(ctx, refConfig(srv.URL))
	require.NoError(t, err)
	// No credential may reach the report, whatever the outcome.
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	for _, tok := range []string{refToken, refUsageless, refOtherToken} {
		require.NotContains(t, string(b), tok, "a credential leaked into the report")
	}
	return rep
}

func logResults(t *testing.T, rep *conformance.Report, all bool) {
	t.Helper()
	for _, r := range rep.Results {
		if all || r.Status != conformance.StatusPass {
			line := string(r.Status) + " " + r.ID + " " + r.Endpoint + ": " + r.Message
			if r.Evidence != nil {
				line += "\n    " + r.Evidence.Curl + "\n    " + r.Evidence.Response
			}
			t.Log(line)
		}
	}
}

func TestReferenceProviderPasses(t *testing.T) {
	t.Parallel()
	rep := runRef(t, noDefect)
	logResults(t, rep, false)
	ran := map[string]bool{}
	for _, r := range rep.Results {
		require.NotEqual(t, conformance.StatusFail, r.Status, "%s %s: %s", r.ID, r.Endpoint, r.Message)
		require.NotEqual(t, conformance.StatusWarn, r.Status, "%s %s: %s", r.ID, r.Endpoint, r.Message)
		require.NotEqual(t, conformance.StatusError, r.Status, "%s %s: %s", r.ID, r.Endpoint, r.Message)
		if r.Status == conformance.StatusPass {
			ran[r.ID] = true
		}
	}
	require.False(t, rep.Failed(true))
	// The reference data meets every precondition (ties, tombstones, a
	// second tenant, a token without read:usage), so every check that is
	// not INFO passed somewhere rather than being skipped everywhere.
	for _, c := range conformance.Catalogue {
		if c.Level != conformance.LevelInfo {
			require.True(t, ran[c.ID], "check %s never passed against the reference provider", c.ID)
		}
	}
}

func TestReferenceProviderGoTest(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newRefProvider(noDefect))
	t.Cleanup(srv.Close)
	conformance.Test(t, refConfig(srv.URL))
}

// brokenCase is one defect, the check meant to catch it, and the other MUST
// checks that legitimately fail with it because they enforce the same rule.
type brokenCase struct {
	defect defect
	want   string
	// also lists MUST checks allowed to fail too, each with its reason.
	also []string
}

var brokenCases = []brokenCase{
	{defect: dOffsetTimestamps, want: "TIME-01"},
	{defect: dMixedPrecision, want: "TIME-02"},
	{defect: dDuplicateAcrossPages, want: "PAGE-02"},
	{defect: dTieSkip, want: "PAGE-03"},
	{defect: dNonRetrySafe, want: "PAGE-05"},
	{defect: dMalformedFirstPage, want: "PAGE-06"},
	{defect: dEndpointUnbound, want: "PAGE-07"},
	{defect: dFilterUnbound, want: "PAGE-08"},
	{defect: dPlainCursor, want: "PAGE-10"},
	{defect: dCursorLoop, want: "PAGE-01"},
	{defect: dCursorLoopAlways, want: "PAGE-01"},
	{defect: dHasMoreNullCursor, want: "ENV-03"},
	// The far-future page is empty yet says hasMore true: the catalogue
	// asks FILT-03 for hasMore false there.
	{defect: dHasMoreNullAlways, want: "ENV-03", also: []string{"FILT-03"}},
	// A page without hasMore does not say hasMore false: the far-future
	// page is not the empty page FILT-03 asks for.
	{defect: dEnvelopeNoHasMore, want: "ENV-01", also: []string{"FILT-03"}},
	// The far-future page is exactly where an empty list is served.
	{defect: dDataNullEmpty, want: "ENV-01", also: []string{"FILT-03"}},
	{defect: dDuplicateData, want: "ENV-01"},
	{defect: dHasMoreString, want: "ENV-01", also: []string{"FILT-03"}},
	{defect: dCursorNumber, want: "ENV-01", also: []string{"FILT-03"}},
	{defect: dFilterFirstPageOnly, want: "FILT-01"},
	{defect: dCategoryFirstPageOnly, want: "FILT-04"},
	{defect: dLimitFirstPageOnly, want: "PAGE-09"},
	{defect: dTenantLaterPages, want: "AUTH-07"},
	{defect: dAPIKeyFirstPageOnly, want: "AUTH-06"},
	{defect: dUsageGroupByFirstPage, want: "USE-02"},
	{defect: dOffsetLaterPages, want: "TIME-01"},
	// The category walks meet the same refusal.
	{defect: dFilteredCursor400, want: "FILT-02", also: []string{"FILT-04"}},
	{defect: dLimitIgnored, want: "PAGE-09"},
	{defect: dLimitZero500, want: "PAGE-09", also: []string{"HTTP-01"}},
	{defect: dWrongOrder, want: "PAGE-12"},
	{defect: dUpdatedSinceExcl, want: "FILT-01"},
	{defect: dOccurredAfterIncl, want: "FILT-01"},
	{defect: dFarFuture, want: "FILT-03"},
	{defect: dCategoryIgnored, want: "FILT-04"},
	{defect: dTimeFilterLenient, want: "TIME-03"},
	{defect: dOffsetFilterIgnored, want: "TIME-04"},
	{defect: dUsageMisaligned, want: "USE-01"},
	{defect: dGroupByIgnored, want: "USE-02"},
	{defect: dUsageSumsDiffer, want: "USE-03"},
	{defect: dBadGranularity200, want: "USE-04"},
	{defect: dUsageRangeUnbounded, want: "USE-04"},
	{defect: dSingleDiffers, want: "REC-01"},
	{defect: dUnknownID200, want: "REC-02"},
	{defect: dHostileID500, want: "REC-03", also: []string{"HTTP-01"}},
	{defect: dTombstoneMessages, want: "REC-04"},
	// A tombstone that is listed but 404 by id is also a listed record
	// that differs from its single record.
	{defect: dTombstoneGone, want: "REC-04", also: []string{"REC-01"}},
	{defect: dMissingID, want: "ENV-02"},
	{defect: dUnknownEnum, want: "ENV-06"},
	{defect: dListNoAuth, want: "AUTH-01"},
	{defect: dNoChallenge, want: "AUTH-02"},
	{defect: dWrongToken403, want: "AUTH-02"},
	{defect: dScopeNotEnforced, want: "AUTH-03"},
	{defect: dCursorAuthority, want: "AUTH-04"},
	{defect: dQueryToken, want: "AUTH-05"},
	{defect: dAPIKeyIgnored, want: "AUTH-06"},
	{defect: dAPIKeyLoses, want: "AUTH-06"},
	{defect: dOtherTenantByID, want: "AUTH-07"},
	{defect: dTextPlainErrors, want: "ENV-04"},
	{defect: dProblemNoTitle, want: "ENV-05"},
	{defect: dPost200, want: "HTTP-02"},
	{defect: dRate429NoRetryAfter, want: "HTTP-03"},
}

// TestEmptyPageNamed: "data": null fails ENV-01 at every endpoint that
// served an empty page, and the message names the page.
func TestEmptyPageNamed(t *testing.T) {
	t.Parallel()
	rep := runRef(t, dDataNullEmpty)
	failed := map[string]string{}
	for _, r := range rep.Results {
		if r.ID == "ENV-01" && r.Status == conformance.StatusFail {
			failed[r.Endpoint] = r.Message
		}
	}
	for _, ep := range []string{"/conversations", "/assistants", "/events"} {
		require.Contains(t, failed, ep)
		require.Contains(t, failed[ep], "2999-01-01", "the message names the far-future page")
		require.Contains(t, failed[ep], "/data", failed[ep])
	}
}

// TestFilterDefectNamesPageAndRecord: a cursor that forgets the filters
// fails FILT-01 with the page and the record.
func TestFilterDefectNamesPageAndRecord(t *testing.T) {
	t.Parallel()
	rep := runRef(t, dFilterFirstPageOnly)
	for _, r := range rep.Results {
		if r.ID == "FILT-01" && r.Status == conformance.StatusFail {
			require.Regexp(t, `^page [2-9]\d* of startedAfter=\S+ \(limit=\d+\) returned "conv_[0-9a-f]+" with startedAt `, r.Message)
			require.Contains(t, r.Evidence.Curl, "cursor=")
			return
		}
	}
	t.Fatal("FILT-01 did not fail")
}

func levelOf(t *testing.T, id string) conformance.Level {
	t.Helper()
	for _, c := range conformance.Catalogue {
		if c.ID == id {
			return c.Level
		}
	}
	t.Fatalf("check %s is not in the catalogue", id)
	return ""
}

func TestBrokenProviders(t *testing.T) {
	t.Parallel()
	require.GreaterOrEqual(t, len(brokenCases), 25)
	seen := map[defect]bool{}
	for i, tc := range brokenCases {
		require.False(t, seen[tc.defect], "defect %s listed twice", tc.defect)
		seen[tc.defect] = true
		// Each case runs the whole suite, which is sequential: the race
		// detector learns nothing more from the sixtieth than from the
		// fifth, and it makes each about five times slower. With -race a
		// quarter of the cases run; make test runs every one.
		if race.Enabled && i%4 != 0 {
			continue
		}
		t.Run(string(tc.defect), func(t *testing.T) {
			t.Parallel()
			rep := runRef(t, tc.defect)
			logResults(t, rep, false)

			level := levelOf(t, tc.want)
			wantStatus := conformance.StatusFail
			if level != conformance.LevelMust {
				wantStatus = conformance.StatusWarn
			}
			caught := false
			for _, r := range rep.Results {
				if r.ID != tc.want || r.Status != wantStatus {
					continue
				}
				caught = true
				require.NotNil(t, r.Evidence, "%s %s has no evidence", r.ID, r.Endpoint)
				require.True(t, strings.HasPrefix(r.Evidence.Curl, "curl "), "%s %s: evidence %q is not a curl line", r.ID, r.Endpoint, r.Evidence.Curl)
			}
			require.True(t, caught, "defect %s: %s did not %s", tc.defect, tc.want, wantStatus)

			// No unrelated MUST check fails.
			for _, r := range rep.Results {
				if r.Status != conformance.StatusFail || r.ID == tc.want {
					continue
				}
				require.Contains(t, tc.also, r.ID, "defect %s (meant for %s) also failed the unrelated MUST check %s at %s: %s",
					tc.defect, tc.want, r.ID, r.Endpoint, r.Message)
			}
			if level == conformance.LevelMust {
				require.True(t, rep.Failed(false))
			} else {
				require.True(t, rep.Failed(true))
				if len(tc.also) == 0 {
					require.False(t, rep.Failed(false), "a SHOULD defect failed the run")
				}
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newRefProvider(noDefect))
	t.Cleanup(srv.Close)
	for name, cfg := range map[string]conformance.Config{
		"no URL":           {Token: refToken},
		"relative URL":     {BaseURL: "localhost/api", Token: refToken},
		"no token":         {BaseURL: srv.URL},
		"unknown check id": {BaseURL: srv.URL, Token: refToken, Only: []string{"PAGE-99"}},
		"unknown skip id":  {BaseURL: srv.URL, Token: refToken, Skip: []string{"NOPE"}},
		"unknown resource": {BaseURL: srv.URL, Token: refToken, Resources: []string{"chats"}},
	} {
		t.Run(name, func(t *testing.T) {
			rep, err := conformance.Run(t.Context(), cfg)
			require.Error(t, err)
			require.Nil(t, rep)
			require.False(t, errors.Is(err, conformance.ErrUnreachable))
		})
	}
	// A token the provider does not accept is a configuration error too.
	rep, err := conformance.Run(t.Context(), conformance.Config{BaseURL: srv.URL, Token: "not-a-token"})
	require.Error(t, err)
	require.Nil(t, rep)
	require.NotContains(t, err.Error(), refToken)
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	// A port that was just free: nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	rep, err := conformance.Run(t.Context(), conformance.Config{BaseURL: "http://" + addr, Token: refToken, RequestTimeout: 2 * time.Second})
	require.ErrorIs(t, err, conformance.ErrUnreachable)
	require.Nil(t, rep)
}

// TestOnly runs one family against a broken provider: the selected check
// still catches its defect and nothing outside the selection is reported.
func TestOnly(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newRefProvider(dNoChallenge))
	t.Cleanup(srv.Close)
	cfg := refConfig(srv.URL)
	cfg.Only = []string{"AUTH"}
	rep, err := conformance.Run(t.Context(), cfg)
	require.NoError(t, err)
	require.NotEmpty(t, rep.Results)
	failed := false
	for _, r := range rep.Results {
		require.True(t, strings.HasPrefix(r.ID, "AUTH-"), "%s reported with Only AUTH", r.ID)
		failed = failed || r.ID == "AUTH-02" && r.Status == conformance.StatusFail
	}
	require.True(t, failed)
}
