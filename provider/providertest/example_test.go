package providertest_test

import (
	"testing"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/provider/providertest"
)

// A vendor checks its DataSource in a test of its own: the behaviour suite
// (Run) and the black-box conformance suite (Conformance), each on a fresh,
// empty store that the factory returns, as the DataSource read by the
// handler and the Writer the suites fill it through. Here memsource stands in
// for the vendor's store.
//
// Both suites report through the *testing.T of a running test, so they run
// only under go test: this example is compiled but not run. The same calls
// run in provider/memsource's own tests.
func Example() {
	testProvider := func(t *testing.T) { // in your code: func TestProvider(t *testing.T)
		newSource := func(t *testing.T) (provider.DataSource, provider.Writer) {
			src := memsource.New() // open your store here; close it with t.Cleanup
			return src, src
		}
		t.Run("behaviour", func(t *testing.T) { providertest.Run(t, newSource) })
		t.Run("conformance", func(t *testing.T) { providertest.Conformance(t, newSource) })
	}
	_ = testProvider
}
