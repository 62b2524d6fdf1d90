package consumer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/spec"
)

// The fault tests run a real provider (provider.NewHandler over an
// in-memory source filled by demodata) behind a fault-injecting proxy, sync
// it into consumer/sqlstore on SQLite and PostgreSQL while the provider
// changes, and then compare the store's export with the provider's data byte
// for byte.

const (
	faultTenant = "acme"
	faultToken  = "fault-token-3f9c1e"
	faultSource = "acme-provider"
)

// faultNow is the consumer's clock: fixed, so that the usage window the
// poller collects is known. Provider writes of the tests are stamped from
// demodata.DefaultEnd on (see faultWorld.tick), before faultNow.
var faultNow = demodata.DefaultEnd.Add(24 * time.Hour)

// faultUsageRange is the range of usage buckets a poller with the default
// UsageBackfill (30 days) and granularity hour collects at faultNow.
func faultUsageRange() (from, end time.Time) {
	return faultNow.Add(-30 * 24 * time.Hour).Truncate(time.Hour), faultNow.Truncate(time.Hour).Add(time.Hour)
}

// faultClient returns a consumer client without faults for baseURL.
func faultClient(t testing.TB, baseURL string) *consumer.Client {
	t.Helper()
	c, err := consumer.NewClient(consumer.ClientConfig{URL: baseURL, Token: faultToken, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	require.NoError(t, err)
	return c
}

// faultList walks every page of r that q selects and returns the records as
// received.
func faultList(t testing.TB, ctx context.Context, src consumer.Source, r consumer.Resource, q consumer.Query) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	seen := map[string]bool{}
	for {
		p, err := src.Fetch(ctx, r, q)
		require.NoError(t, err, "list %s", r)
		out = append(out, p.Records...)
		if !p.HasMore {
			return out
		}
		require.False(t, seen[p.NextCursor], "the provider repeated a cursor")
		seen[p.NextCursor] = true
		q.Cursor = p.NextCursor
	}
}

// faultProviderData returns the provider's records of r: all of them for
// conversations, assistants and events, the buckets of faultUsageRange
// (granularity hour, grouped by all four dimensions) for usage.
func faultProviderData(t testing.TB, ctx context.Context, c *consumer.Client, r consumer.Resource) []json.RawMessage {
	t.Helper()
	q := consumer.Query{Limit: 1000}
	if r == consumer.Usage {
		q.StartAt, q.EndAt = faultUsageRange()
		q.Granularity = spec.GranularityHour
		q.GroupBy = spec.Dimensions
	}
	return faultList(t, ctx, c, r, q)
}

// faultExport returns what the store exports for (source, r).
func faultExport(t testing.TB, ctx context.Context, s consumer.Store, source string, r consumer.Resource, includeMissing bool) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	require.NoError(t, s.Export(ctx, source, r, includeMissing, func(raw json.RawMessage) error {
		out = append(out, bytes.Clone(raw))
		return nil
	}))
	return out
}

// faultKeyOf returns what identifies a record of r (the id; a usage
// bucket's start and dimensions) and its sort time, for messages.
func faultKeyOf(r consumer.Resource, raw json.RawMessage) (key, at string) {
	var v struct {
		ID         string            `json:"id"`
		UpdatedAt  string            `json:"updatedAt"`
		StartedAt  string            `json:"startedAt"`
		OccurredAt string            `json:"occurredAt"`
		StartAt    string            `json:"startAt"`
		Dimensions map[string]string `json:"dimensions"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return "<not JSON: " + err.Error() + ">", ""
	}
	switch r {
	case consumer.Usage:
		d, _ := json.Marshal(v.Dimensions)
		return v.StartAt + " " + string(d), v.StartAt
	case consumer.Events:
		return v.ID, v.OccurredAt
	default:
		if v.UpdatedAt == "" {
			return v.ID, v.StartedAt + " (startedAt)"
		}
		return v.ID, v.UpdatedAt
	}
}

// faultSame checks that got holds exactly the records of want, in the same
// order and byte for byte, and explains the difference when not.
func faultSame(t testing.TB, r consumer.Resource, what string, want, got []json.RawMessage) bool {
	t.Helper()
	keys := func(list []json.RawMessage) ([]string, map[string]json.RawMessage, []string) {
		var order, dups []string
		m := map[string]json.RawMessage{}
		for _, raw := range list {
			k, _ := faultKeyOf(r, raw)
			if _, dup := m[k]; dup {
				dups = append(dups, k)
			}
			m[k] = raw
			order = append(order, k)
		}
		return order, m, dups
	}
	wantOrder, wantBy, wantDups := keys(want)
	gotOrder, gotBy, gotDups := keys(got)
	require.Empty(t, wantDups, "%s: the provider itself listed duplicates", what)
	ok := true
	if len(gotDups) > 0 {
		t.Errorf("%s: %d duplicate %s, e.g. %q", what, len(gotDups), r, gotDups[:min(5, len(gotDups))])
		ok = false
	}
	var lost, extra, differ []string
	for _, k := range wantOrder {
		g, found := gotBy[k]
		switch {
		case !found:
			_, at := faultKeyOf(r, wantBy[k])
			lost = append(lost, k+" @"+at)
		case !bytes.Equal(g, wantBy[k]):
			_, wat := faultKeyOf(r, wantBy[k])
			_, gat := faultKeyOf(r, g)
			differ = append(differ, fmt.Sprintf("%s (provider @%s, export @%s)", k, wat, gat))
		}
	}
	for _, k := range gotOrder {
		if _, found := wantBy[k]; !found {
			_, at := faultKeyOf(r, gotBy[k])
			extra = append(extra, k+" @"+at)
		}
	}
	if len(lost)+len(extra)+len(differ) > 0 {
		t.Errorf("%s: %d %s in the provider, %d exported: %d lost %q, %d extra %q, %d differ %q",
			what, len(want), r, len(got), len(lost), lost[:min(8, len(lost))], len(extra), extra[:min(8, len(extra))],
			len(differ), differ[:min(8, len(differ))])
		return false
	}
	if !slices.Equal(wantOrder, gotOrder) {
		for i := range wantOrder {
			if wantOrder[i] != gotOrder[i] {
				t.Errorf("%s: same %s, other order: first difference at %d: provider %q, export %q", what, r, i, wantOrder[i], gotOrder[i])
				break
			}
		}
		return false
	}
	return ok
}
