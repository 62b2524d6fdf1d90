package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// emptySource answers every usage window with no bucket.
type emptySource struct{}

func (emptySource) Fetch(context.Context, consumer.Resource, consumer.Query) (consumer.Page, error) {
	return consumer.Page{Paginated: true}, nil
}

func TestUsageAlignTruncatesEveryWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 3, 10, 13, 30, 0, 0, time.UTC)
	for _, tt := range []struct {
		name  string
		align time.Duration
		// first: the start of the first sync; trailing: of the second.
		first, trailing time.Time
	}{
		{"default: the granularity", 0, time.Date(2026, 2, 8, 13, 0, 0, 0, time.UTC), time.Date(2026, 3, 8, 13, 0, 0, 0, time.UTC)},
		{"a day", 24 * time.Hour, time.Date(2026, 2, 8, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC)},
		{"six hours", 6 * time.Hour, time.Date(2026, 2, 8, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store, err := sqlstore.New(ctx, sqldbtest.Open(t, sqldb.SQLite).DB, sqlstore.SQLite)
			require.NoError(t, err)
			rec := &recordingSource{Source: emptySource{}}
			p, err := consumer.NewPoller(rec, store, &consumer.Config{Source: "s", Resources: []consumer.Resource{consumer.Usage},
				UsageAlign: tt.align, Now: func() time.Time { return now }})
			require.NoError(t, err)
			_, err = p.SyncOnce(ctx)
			require.NoError(t, err)
			align := tt.align
			if align == 0 {
				align = time.Hour
			}
			u := rec.queries[consumer.Usage]
			require.Len(t, u, 5, "30 days and a half in windows of 7 days")
			require.Equal(t, tt.first, u[0].StartAt)
			for i, q := range u {
				require.Equal(t, q.StartAt.Truncate(align), q.StartAt, "window %d starts on the alignment", i)
				if i < len(u)-1 {
					require.Equal(t, q.EndAt.Truncate(align), q.EndAt, "window %d ends on the alignment", i)
					require.Equal(t, u[i+1].StartAt, q.EndAt)
				}
			}
			require.Equal(t, time.Date(2026, 3, 10, 14, 0, 0, 0, time.UTC), u[len(u)-1].EndAt, "the last window ends after the hour holding now")

			rec.queries = nil
			_, err = p.SyncOnce(ctx)
			require.NoError(t, err)
			u = rec.queries[consumer.Usage]
			require.Len(t, u, 1)
			require.Equal(t, tt.trailing, u[0].StartAt, "the trailing window starts on the alignment")
		})
	}
}

func TestUsageAlignIsChecked(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		cfg  consumer.Config
		want string
	}{
		{consumer.Config{UsageAlign: -time.Hour}, "must not be negative"},
		{consumer.Config{UsageAlign: 90 * time.Minute}, "not a whole number of hour buckets"},
		{consumer.Config{UsageAlign: 5 * time.Hour}, "neither divides a day nor is a whole number of days"},
		{consumer.Config{UsageAlign: 36 * time.Hour}, "neither divides a day nor is a whole number of days"},
		{consumer.Config{UsageAlign: 8 * 24 * time.Hour}, "longer than UsageWindow"},
		{consumer.Config{UsageAlign: 12 * time.Hour, UsageGranularity: "day"}, "not a whole number of day buckets"},
	} {
		tt.cfg.Source = "s"
		_, err := consumer.NewPoller(emptySource{}, nopStore{}, &tt.cfg)
		require.ErrorContains(t, err, "Config.UsageAlign", tt.want)
		require.ErrorContains(t, err, tt.want)
	}
}

// nopStore is a Store the constructor never calls.
type nopStore struct{ consumer.Store }
