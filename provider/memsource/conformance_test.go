package memsource_test

import (
	"testing"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/provider/providertest"
)

// TestConformance runs the black-box conformance suite against memsource.
func TestConformance(t *testing.T) {
	t.Parallel()
	providertest.Conformance(t, func(*testing.T) (provider.DataSource, provider.Writer) {
		s := memsource.New()
		return s, s
	})
}
