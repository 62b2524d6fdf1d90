package provider

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseParamsErrors(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 5, 10, 30, 0, 0, time.UTC)
	cases := []struct {
		endpoint, query, field string
	}{
		{"conversations", "limit=0", "limit"},
		{"conversations", "limit=-1", "limit"},
		{"conversations", "limit=1001", "limit"},
		{"conversations", "limit=abc", "limit"},
		{"conversations", "limit=1.5", "limit"},
		{"conversations", "limit=", "limit"},
		{"conversations", "limit=1&limit=2", "limit"},
		{"conversations", "updatedSince=yesterday", "updatedSince"},
		{"conversations", "updatedSince=2026-13-01T00:00:00Z", "updatedSince"},
		{"conversations", "updatedSince=2026-01-01T00:00:00", "updatedSince"},
		{"conversations", "updatedSince=2026-01-01", "updatedSince"},
		{"conversations", "startedAfter=2026-01-01 00:00:00Z", "startedAfter"},
		{"conversations", "cursor=", "cursor"},
		{"assistants", "updatedSince=2026-01-01T00:00:00z", "updatedSince"},
		{"events", "occurredAfter=tomorrow", "occurredAfter"},
		{"events", "category=authentication", "category"},
		{"events", "category=Nope", "category"},
		{"usage", "granularity=week", "granularity"},
		{"usage", "groupBy=model,team", "groupBy"},
		{"usage", "groupBy=model,model", "groupBy"},
		{"usage", "groupBy=", "groupBy"},
		{"usage", "startAt=2026-03-02T00:00:00Z&endAt=2026-03-01T00:00:00Z", "endAt"},
		{"usage", "startAt=2026-03-01T00:00:00Z&endAt=2026-03-01T00:00:00Z", "endAt"},
		{"usage", "granularity=hour&startAt=2026-01-01T00:00:00Z&endAt=2026-02-02T00:00:00Z", "endAt"},
		{"usage", "startAt=2025-01-01T00:00:00Z&endAt=2026-01-03T00:00:00Z", "endAt"},
		{"usage", "startAt=bad", "startAt"},
	}
	for _, tc := range cases {
		t.Run(tc.endpoint+"?"+tc.query, func(t *testing.T) {
			v, err := url.ParseQuery(tc.query)
			require.NoError(t, err)
			err = parseAny(tc.endpoint, v, now)
			var e *Error
			require.True(t, errors.As(err, &e), "%s?%s: want an *Error, got %v", tc.endpoint, tc.query, err)
			require.ErrorIs(t, err, ErrInvalid)
			require.Equal(t, tc.field, e.Field, "%s?%s", tc.endpoint, tc.query)
		})
	}
}

func parseAny(endpoint string, v url.Values, now time.Time) error {
	var err error
	switch endpoint {
	case "conversations":
		_, err = parseConversationParams(v)
	case "assistants":
		_, err = parseAssistantParams(v)
	case "events":
		_, err = parseEventParams(v)
	case "usage":
		_, err = parseUsageParams(v, now)
	}
	return err
}

func TestParseConversationParams(t *testing.T) {
	t.Parallel()
	v, _ := url.ParseQuery("updatedSince=2026-01-02T02:00:00.0005%2B02:00&startedAfter=2026-01-01T00:00:00.9999Z&limit=5&unknown=1&Limit=9")
	q, err := parseConversationParams(v)
	require.NoError(t, err)
	// Inclusive bound rounded up, exclusive bound down, to milliseconds.
	require.Equal(t, time.Date(2026, 1, 2, 0, 0, 0, 1e6, time.UTC), q.updatedSince)
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 999e6, time.UTC), q.startedAfter)
	require.Equal(t, 5, q.limit)

	q, err = parseConversationParams(url.Values{})
	require.NoError(t, err)
	require.Equal(t, DefaultLimit, q.limit)
	require.True(t, q.updatedSince.IsZero())
}

func TestParseUsageDefaultsAndRounding(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 5, 10, 30, 0, 0, time.UTC)
	q, err := parseUsageParams(url.Values{}, now)
	require.NoError(t, err)
	require.Equal(t, "day", q.granularity)
	require.Equal(t, time.Date(2026, 3, 6, 0, 0, 0, 0, time.UTC), q.end, "end of the current day")
	require.Equal(t, time.Date(2026, 2, 27, 0, 0, 0, 0, time.UTC), q.start, "7 days before")

	v, _ := url.ParseQuery("granularity=hour&groupBy=department,model")
	q, err = parseUsageParams(v, now)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 3, 5, 11, 0, 0, 0, time.UTC), q.end, "end of the current hour")
	require.Equal(t, []string{"model", "department"}, q.groupBy, "canonical order")

	v, _ = url.ParseQuery("startAt=2026-03-01T10:30:00Z&endAt=2026-03-02T10:30:00Z")
	q, err = parseUsageParams(v, now)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), q.start, "startAt rounded down")
	require.Equal(t, time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC), q.end, "endAt rounded up")

	// The longest ranges allowed.
	v, _ = url.ParseQuery("granularity=hour&startAt=2026-01-01T00:00:00Z&endAt=2026-02-01T00:00:00Z")
	_, err = parseUsageParams(v, now)
	require.NoError(t, err)
	v, _ = url.ParseQuery("startAt=2025-01-01T00:00:00Z&endAt=2026-01-02T00:00:00Z")
	_, err = parseUsageParams(v, now)
	require.NoError(t, err)
}

func FuzzParseParams(f *testing.F) {
	for _, s := range []string{
		"limit=10", "updatedSince=2026-01-01T00:00:00Z&startedAfter=2026-01-01T00:00:00%2B02:00",
		"category=Access&occurredAfter=2026-01-01T00:00:00Z", "granularity=hour&groupBy=model,userId",
		"startAt=2026-01-01T00:00:00Z&endAt=2026-01-08T00:00:00Z", "cursor=abc", "limit=1&limit=2", "%zz",
		"startAt=9999-12-31T23:59:59Z&endAt=9999-12-31T23:59:59Z", "startAt=0000-01-01T00:00:00Z",
	} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 5, 10, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, query string) {
		v, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		for _, ep := range []string{"conversations", "assistants", "events", "usage"} {
			err := parseAny(ep, v, now)
			if err == nil {
				continue
			}
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) || e.Field == "" {
				t.Fatalf("%s?%s: error without a field: %v", ep, query, err)
			}
		}
	})
}
