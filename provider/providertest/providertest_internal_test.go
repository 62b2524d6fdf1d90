package providertest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// recorder is a Writer that records the calls it gets.
type recorder struct{ calls []string }

func (r *recorder) add(format string, a ...any) error {
	r.calls = append(r.calls, fmt.Sprintf(format, a...))
	return nil
}

func (r *recorder) UpsertConversation(_ context.Context, tenant string, c spec.Conversation) error {
	return r.add("conversation %s %s %s", tenant, c.ID, c.UpdatedAt)
}

func (r *recorder) DeleteConversation(_ context.Context, tenant, id string, at time.Time) error {
	return r.add("delete %s %s %s", tenant, id, at)
}

func (r *recorder) UpsertAssistant(_ context.Context, tenant string, a spec.Assistant) error {
	return r.add("assistant %s %s", tenant, a.ID)
}

func (r *recorder) AppendEvent(_ context.Context, tenant string, e spec.Event) error {
	return r.add("event %s %s", tenant, e.ID)
}

func (r *recorder) RecordUsage(_ context.Context, tenant string, u provider.UsageRecord) error {
	return r.add("usage %s %s %s", tenant, u.ID, u.At)
}

// The data the suite writes is deterministic and has the properties its
// checks rely on.
func TestFixture(t *testing.T) {
	var a, b recorder
	fa, fb := load(t, &a), load(t, &b)
	if !reflect.DeepEqual(a.calls, b.calls) || !reflect.DeepEqual(fa, fb) {
		t.Fatal("load is not deterministic")
	}
	for _, tc := range []struct {
		res string
		at  time.Time
	}{{"conversations", convTie}, {"assistants", assistantTie}, {"events", eventTie}} {
		t.Run(tc.res, func(t *testing.T) {
			items := fa.items(tc.res, tenant1)
			if _, n := tieGroup(items, tc.at); n < 5 {
				t.Errorf("%s: tie group of %d", tc.res, n)
			}
			seen := map[string]bool{}
			for i, it := range items {
				if seen[it.id] {
					t.Errorf("%s: id %q twice", tc.res, it.id)
				}
				seen[it.id] = true
				if i > 0 && !items[i-1].key.Less(it.key) {
					t.Errorf("%s: not sorted at %d", tc.res, i)
				}
				if _, ok := fa.find(tc.res, tenant2, it.id); ok {
					t.Errorf("%s: id %q in both tenants", tc.res, it.id)
				}
			}
			if len(items) >= 100 {
				t.Errorf("%s: %d records; the walks without limit expect one page of the default 100", tc.res, len(items))
			}
		})
	}
	tombs := 0
	for _, it := range fa.conversations[tenant1] {
		if !it.deletedAt.IsZero() {
			tombs++
			if !it.key.Time.Equal(it.deletedAt) {
				t.Errorf("tombstone %q: updatedAt is not deletedAt", it.id)
			}
		}
	}
	if tombs != 4 {
		t.Errorf("%d tombstones, want 4", tombs)
	}
	cats := map[string]bool{}
	for _, it := range fa.events[tenant1] {
		cats[it.category] = true
	}
	for _, c := range eventCategories {
		if !cats[c] {
			t.Errorf("no event of category %s", c)
		}
	}
	if cats[spec.CategoryPolicy] {
		t.Error("the suite expects no Policy event")
	}
	for _, u := range fa.usage[tenant1] {
		if !u.At.Equal(u.At.Truncate(time.Millisecond)) || u.At.Location() != time.UTC {
			t.Fatalf("usage %s: At %v not in UTC milliseconds", u.ID, u.At)
		}
	}
}

func TestGroupings(t *testing.T) {
	g := groupings()
	seen := map[string]bool{}
	for _, s := range g {
		if !slices.IsSortedFunc(s, func(a, b string) int { return slices.Index(spec.Dimensions, a) - slices.Index(spec.Dimensions, b) }) {
			t.Errorf("%v not in canonical order", s)
		}
		seen[strings.Join(s, ",")] = true
	}
	if len(g) != 16 || len(seen) != 16 {
		t.Errorf("%d groupings, %d distinct; want 16", len(g), len(seen))
	}
}

func TestTampered(t *testing.T) {
	c := "6A_ainf1WEbRDyDQHGBYFaN7Ebhp-Fj6CjEYVMvnxtvdQ6-9v06bolWlq9HvioPKKkOrmIFrclm1Bug"
	for name, v := range tampered(c) {
		if v == c {
			t.Errorf("%s: equals the cursor", name)
		}
	}
}

func TestBucketOf(t *testing.T) {
	at := time.Date(2026, 3, 1, 23, 59, 59, 999_000_000, time.FixedZone("", 2*3600)) // 21:59:59.999Z
	if got := bucketOf(at, spec.GranularityHour); !got.Equal(time.Date(2026, 3, 1, 21, 0, 0, 0, time.UTC)) {
		t.Errorf("hour bucket %v", got)
	}
	if got := bucketOf(at, spec.GranularityDay); !got.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("day bucket %v", got)
	}
}
