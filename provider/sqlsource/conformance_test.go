package sqlsource_test

import (
	"context"
	"testing"

	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/providertest"
	"github.com/aiusage/kit/provider/sqlsource"
)

// TestConformance runs the black-box conformance suite against sqlsource on
// both databases.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			providertest.Conformance(t, func(t *testing.T) (provider.DataSource, provider.Writer) {
				src, err := sqlsource.New(context.Background(), sqldbtest.Open(t, d).DB, d)
				if err != nil {
					t.Fatal(err)
				}
				return src, src
			})
		})
	}
}
