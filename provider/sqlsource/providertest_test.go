package sqlsource_test

import (
	"context"
	"testing"

	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/providertest"
	"github.com/aiusage/kit/provider/sqlsource"
)

// TestBehaviourSuite runs the kit's shared DataSource behaviour suite over
// HTTP against sqlsource, with and without its page cache, on both
// databases.
func TestBehaviourSuite(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		for _, cache := range []int64{sqlsource.DefaultPageCacheBytes, 0} {
			name := string(d) + "/cache"
			if cache == 0 {
				name = string(d) + "/nocache"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				providertest.Run(t, func(t *testing.T) (provider.DataSource, provider.Writer) {
					db := sqldbtest.Open(t, d)
					src, err := sqlsource.New(context.Background(), db.DB, db.Dialect, sqlsource.WithPageCache(cache))
					if err != nil {
						t.Fatal(err)
					}
					return src, src
				})
			})
		}
	}
}
