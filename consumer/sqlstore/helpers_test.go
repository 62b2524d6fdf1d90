package sqlstore_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// at returns t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

func newStore(t testing.TB, db *sqldb.DB) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.New(t.Context(), db.DB, db.Dialect)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// lease returns owner's lease of (source, r) at t0, for an hour.
func lease(source string, r consumer.Resource, owner string) consumer.Lease {
	return consumer.Lease{Source: source, Resource: r, Owner: owner, Now: t0, Expires: t0.Add(time.Hour)}
}

// acquire takes the lease or fails the test.
func acquire(t *testing.T, s *sqlstore.Store, l consumer.Lease) consumer.Lease {
	t.Helper()
	ok, err := s.AcquireLease(t.Context(), l)
	require.NoError(t, err)
	require.True(t, ok, "lease %+v", l)
	return l
}

// save writes records in run with the lease l (acquired if needed).
func save(t *testing.T, s *sqlstore.Store, l consumer.Lease, run int64, recs ...consumer.Record) {
	t.Helper()
	require.NoError(t, s.SavePage(t.Context(), consumer.PageWrite{
		Lease: l, Records: recs, Checkpoint: consumer.Checkpoint{Run: run, InProgress: true},
	}))
}

// conv returns a conversation record updated at updated; note lands in the
// JSON so versions can be told apart.
func conv(id string, started, updated time.Time, note string) consumer.Record {
	c := map[string]any{
		"id": id, "conversationId": "thread-" + id,
		"startedAt": spec.NewTime(started), "updatedAt": spec.NewTime(updated),
		"metadata": map[string]any{"note": note}, "x-unknown": true,
	}
	b, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return consumer.Record{ID: id, Time: updated.UTC().Truncate(time.Millisecond), StartedAt: started, JSON: b}
}

// tombstoneRec returns a conversation tombstone record.
func tombstoneRec(id string, started, deleted time.Time) consumer.Record {
	b := fmt.Sprintf(`{"id":%q,"startedAt":%q,"updatedAt":%q,"deletedAt":%q}`, id,
		spec.NewTime(started), spec.NewTime(deleted), spec.NewTime(deleted))
	return consumer.Record{ID: id, Time: deleted, StartedAt: started, Deleted: true, JSON: json.RawMessage(b)}
}

func assistantRec(id string, updated time.Time) consumer.Record {
	b := fmt.Sprintf(`{"id":%q,"name":"A %s","createdAt":%q,"updatedAt":%q}`, id, id, spec.NewTime(t0), spec.NewTime(updated))
	return consumer.Record{ID: id, Time: updated, JSON: json.RawMessage(b)}
}

func eventRec(id string, occurred time.Time, category string) consumer.Record {
	b := fmt.Sprintf(`{"id":%q,"occurredAt":%q,"type":"x.y","category":%q}`, id, spec.NewTime(occurred), category)
	return consumer.Record{ID: id, Time: occurred, Category: category, JSON: json.RawMessage(b)}
}

// bucket describes a stored usage bucket for tests.
type bucket struct {
	gran                    string
	start                   time.Time
	dims                    map[string]string // grouped dimensions and their values
	requests, convs, active int64
	in, out                 int64
	cost                    float64
}

func (b bucket) record() consumer.Record {
	width := time.Hour
	if b.gran == spec.GranularityDay {
		width = 24 * time.Hour
	}
	k := &consumer.BucketKey{Granularity: b.gran, Start: b.start, End: b.start.Add(width)}
	key := []any{b.gran, spec.NewTime(b.start).String()}
	for _, d := range spec.Dimensions {
		v, ok := b.dims[d]
		if !ok {
			key = append(key, nil)
			continue
		}
		key = append(key, v)
		k.Grouped = append(k.Grouped, d)
		switch d {
		case spec.DimensionModel:
			k.Model = v
		case spec.DimensionAssistantID:
			k.AssistantID = v
		case spec.DimensionUserID:
			k.UserID = v
		case spec.DimensionDepartment:
			k.Department = v
		}
	}
	id, _ := json.Marshal(key)
	body, _ := json.Marshal(map[string]any{
		"startAt": spec.NewTime(b.start), "endAt": spec.NewTime(k.End), "granularity": b.gran,
		"dimensions": b.dims,
		"metrics": map[string]any{
			"requests": b.requests, "conversations": b.convs, "activeUsers": b.active,
			"inputTokens": b.in, "outputTokens": b.out, "cost": b.cost,
		},
	})
	return consumer.Record{ID: string(id), Time: b.start, Bucket: k, JSON: body}
}

// exported returns the JSON Export gives, as strings.
func exported(t *testing.T, s *sqlstore.Store, source string, r consumer.Resource, includeMissing bool) []string {
	t.Helper()
	var out []string
	require.NoError(t, s.Export(t.Context(), source, r, includeMissing, func(m json.RawMessage) error {
		out = append(out, string(m))
		return nil
	}))
	return out
}

// exportedIDs returns the ids of the records Export gives.
func exportedIDs(t *testing.T, s *sqlstore.Store, source string, r consumer.Resource, includeMissing bool) []string {
	t.Helper()
	var ids []string
	for _, j := range exported(t, s, source, r, includeMissing) {
		var v struct{ ID string }
		require.NoError(t, json.Unmarshal([]byte(j), &v))
		ids = append(ids, v.ID)
	}
	return ids
}

// count runs a count query on the store's database.
func count(t *testing.T, s *sqlstore.Store, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, sqlstore.DBOf(s).QueryRowContext(t.Context(), query, args...).Scan(&n))
	return n
}

// pad returns a string of n bytes.
func pad(n int) string { return strings.Repeat("x", n) }
