package export_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/export"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	pexport "github.com/aiusage/kit/provider/export"
)

// TestCorruptIncrementReplacedByFullSet: a consumer whose sync fails on a
// corrupt increment recovers once the provider writes a later full set,
// though the corrupt file stays as it is, exactly as a fresh consumer of the
// same export does (docs/export.md: the sync "succeeds once the file is
// repaired or a later full set replaces the chain").
func TestCorruptIncrementReplacedByFullSet(t *testing.T) {
	t.Parallel()
	for _, r := range consumer.Resources {
		t.Run(string(r), func(t *testing.T) {
			t.Parallel()
			sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
				w := newWorld(t, 31, 120)
				store := openStore(t, db)
				sy := w.newSyncer(store, w.dir, 50, nil)
				w.publish(pexport.Full)
				w.firstSync = w.now
				sy.ok("first sync")

				w.mutate(60)
				inc := w.publish(pexport.Auto)
				name := filepath.Join(w.dir, inc.ID, string(r)+".ndjson.gz")
				good, err := os.ReadFile(name)
				require.NoError(t, err)
				bad := bytes.Clone(good)
				bad[len(bad)/2] ^= 0x40
				require.NoError(t, os.WriteFile(name, bad, 0o644))
				for range 2 {
					res := sy.sync()
					var failed bool
					for _, rr := range res.Resources {
						if rr.Err != nil {
							require.ErrorIs(t, rr.Err, export.ErrCorrupt, "%s", rr.Resource)
							require.Equal(t, r, rr.Resource)
							failed = true
						}
					}
					require.True(t, failed, "the sync of %s fails on its corrupt file", r)
				}

				// The provider writes a new full set; the corrupt file stays.
				w.mutate(20)
				w.publish(pexport.Full)
				sy.ok("the sync after a full set that replaces the chain")
				w.sameAll("the consumer that was stuck", store)
				sy.ok("the sync after that")

				// A fresh consumer of the same export agrees.
				fresh := openStore(t, sqldbtest.Open(t, db.Dialect))
				w.newSyncer(fresh, w.dir, 50, nil).ok("a fresh consumer")
				w.sameAll("a fresh consumer", fresh)
			})
		})
	}
}
