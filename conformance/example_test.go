package conformance_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aiusage/kit/conformance"
)

// The suite run against a provider: here the reference provider of this
// package's tests, which passes every check. A real run uses the provider's
// own base URL and tokens.
func Example() {
	srv := httptest.NewServer(newRefProvider(noDefect))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := conformance.Run(ctx, conformance.Config{
		BaseURL:          srv.URL,
		Token:            refToken,      // reads every resource
		UsagelessToken:   refUsageless,  // lacks read:usage (AUTH-03)
		OtherTenantToken: refOtherToken, // another customer (AUTH-04, AUTH-07)
		MaxRate:          1000,          // a local server takes more than the default 50 per second
	})
	if err != nil {
		fmt.Println("the suite could not run:", err)
		return
	}
	fmt.Println("failed:", rep.Failed(false))
	fmt.Println("FAIL results:", rep.Counts()[conformance.StatusFail])
	// Output:
	// failed: false
	// FAIL results: 0
}

// The suite inside go test: each result becomes a subtest of the
// provider's own test, named by check id and endpoint (for example
// TestConformance/PAGE-05/conversations).
func Example_goTest() {
	testConformance := func(t *testing.T) {
		srv := httptest.NewServer(newRefProvider(noDefect)) // the provider's handler
		t.Cleanup(srv.Close)
		conformance.Test(t, conformance.Config{
			BaseURL:          srv.URL,
			Token:            refToken,
			UsagelessToken:   refUsageless,
			OtherTenantToken: refOtherToken,
		})
	}
	_ = testConformance
}
