package memsource_test

import (
	"testing"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/provider/providertest"
)

func TestProviderSuite(t *testing.T) {
	t.Parallel()
	providertest.Run(t, func(*testing.T) (provider.DataSource, provider.Writer) {
		src := memsource.New()
		return src, src
	})
}
