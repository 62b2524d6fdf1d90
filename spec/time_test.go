package spec_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

// timestampCases: the verdicts of CheckTimestamp and CheckTimestampMillis,
// and whether ParseTime (any offset) accepts the value.
var timestampCases = []struct {
	in            string
	utc, millis   bool // CheckTimestamp, CheckTimestampMillis
	parses        bool // ParseTime
	wantInstantMs int64
}{
	{in: "2026-01-02T03:04:05Z", utc: true, parses: true, wantInstantMs: 1767323045000},
	{in: "2026-01-02T03:04:05.678Z", utc: true, millis: true, parses: true, wantInstantMs: 1767323045678},
	{in: "2026-01-02T03:04:05.6Z", utc: true, parses: true, wantInstantMs: 1767323045600},
	{in: "2026-01-02T03:04:05.678901Z", utc: true, parses: true, wantInstantMs: 1767323045678},
	{in: "2026-01-02T03:04:05.123456789Z", utc: true, parses: true, wantInstantMs: 1767323045123},
	{in: "2024-02-29T23:59:59.999Z", utc: true, millis: true, parses: true, wantInstantMs: 1709251199999},
	{in: "1970-01-01T00:00:00.000Z", utc: true, millis: true, parses: true, wantInstantMs: 0},
	{in: "2026-01-02T05:04:05+02:00", parses: true, wantInstantMs: 1767323045000},
	{in: "2026-01-01T22:04:05.678-05:00", parses: true, wantInstantMs: 1767323045678},
	{in: "2026-01-02T03:04:05-00:00", parses: true, wantInstantMs: 1767323045000},
	{in: "2026-01-02T03:04:05+00:00", parses: true, wantInstantMs: 1767323045000},
	{in: "2026-01-02T08:49:05+05:45", parses: true, wantInstantMs: 1767323045000},
	{in: "2026-01-02T03:04:05z"},
	{in: "2026-01-02t03:04:05Z"},
	{in: "2026-01-02 03:04:05Z"},
	{in: "2026-01-02T03:04:05"},
	{in: "2026-01-02T03:04:05.678"},
	{in: "2026-13-02T03:04:05Z"},
	{in: "2026-00-02T03:04:05Z"},
	{in: "2026-02-30T03:04:05Z"},
	{in: "2025-02-29T03:04:05Z"},
	{in: "2026-01-32T03:04:05Z"},
	{in: "2026-01-02T24:00:00Z"},
	{in: "2026-01-02T03:60:05Z"},
	{in: "2016-12-31T23:59:60Z"},
	{in: "2026-01-02"},
	{in: "03:04:05Z"},
	{in: ""},
	{in: "Z"},
	{in: "now"},
	{in: "1767323045"},
	{in: " 2026-01-02T03:04:05Z"},
	{in: "2026-01-02T03:04:05Z "},
	{in: "2026-01-02T03:04:05.Z"},
	{in: "2026-01-02T03:04:05,678Z"},
	{in: "2026-01-02T3:04:05.67Z"},
	{in: "2026-1-02T03:04:05.67Z"},
	{in: "2026-01-02T03:04:05.1234567890Z"},
	{in: "2026-01-02T03:04:05+0200"},
	{in: "2026-01-02T03:04:05+02"},
	{in: "2026-01-02T03:04:05+24:00"},
	{in: "2026-01-02T03:04:05+02:60"},
	{in: "2026-01-02T03:04:05ZZ"},
	{in: "+2026-01-02T03:04:05Z"},
	{in: "20260102T030405Z"},
}

// timestampCaseName is the subtest name of a timestampCases input: the input
// itself, which t.Run makes unique and printable.
func timestampCaseName(in string) string {
	if in == "" {
		return "empty"
	}
	return in
}

func TestCheckTimestamp(t *testing.T) {
	t.Parallel()
	for _, tc := range timestampCases {
		t.Run(timestampCaseName(tc.in), func(t *testing.T) {
			err := spec.CheckTimestamp(tc.in)
			if tc.utc {
				require.NoError(t, err, tc.in)
			} else {
				require.Error(t, err, tc.in)
				require.Contains(t, err.Error(), "2026-01-02T03:04:05", "the message shows an example")
			}
			err = spec.CheckTimestampMillis(tc.in)
			if tc.millis {
				require.NoError(t, err, tc.in)
			} else {
				require.Error(t, err, tc.in)
			}
		})
	}
	require.Contains(t, spec.CheckTimestamp("2026-01-02T05:04:05+02:00").Error(), "not in UTC")
	require.Contains(t, spec.CheckTimestampMillis("2026-01-02T03:04:05Z").Error(), "three fractional digits")
	require.Contains(t, spec.CheckTimestampMillis("2026-01-02T03:04:05.678901Z").Error(), "three fractional digits")
}

func TestParseTime(t *testing.T) {
	t.Parallel()
	for _, tc := range timestampCases {
		t.Run(timestampCaseName(tc.in), func(t *testing.T) {
			got, err := spec.ParseTime(tc.in)
			if !tc.parses && !tc.utc {
				require.Error(t, err, tc.in)
				require.True(t, got.IsZero(), tc.in)
				return
			}
			require.NoError(t, err, tc.in)
			require.Equal(t, time.UTC, got.Location(), "%s: result is UTC", tc.in)
			require.Equal(t, tc.wantInstantMs, got.UnixMilli(), tc.in)
		})
	}
	// Nanoseconds are kept: truncating is NewTime's job.
	got, err := spec.ParseTime("2026-01-02T03:04:05.123456789+01:00")
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 2, 2, 4, 5, 123456789, time.UTC), got)
}

func TestNewTime(t *testing.T) {
	t.Parallel()
	berlin := time.FixedZone("CET", 3600)
	v := spec.NewTime(time.Date(2026, 1, 2, 4, 4, 5, 678_999_999, berlin))
	require.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC), v.Time)
	require.Equal(t, time.UTC, v.Location())
	require.Equal(t, "2026-01-02T03:04:05.678Z", v.String())
	p := spec.TimePtr(time.Date(2026, 1, 2, 4, 4, 5, 0, berlin))
	require.NotNil(t, p)
	require.Equal(t, "2026-01-02T03:04:05.000Z", p.String())
}

func TestTimeJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, out string }{
		{`"2026-01-02T03:04:05Z"`, `"2026-01-02T03:04:05.000Z"`},
		{`"2026-01-02T03:04:05.6Z"`, `"2026-01-02T03:04:05.600Z"`},
		{`"2026-01-02T03:04:05.678Z"`, `"2026-01-02T03:04:05.678Z"`},
		{`"2026-01-02T03:04:05.678999Z"`, `"2026-01-02T03:04:05.678Z"`}, // truncated, not rounded
		{`"2026-01-02T05:04:05.678+02:00"`, `"2026-01-02T03:04:05.678Z"`},
		{`"2026-01-01T23:04:05-04:00"`, `"2026-01-02T03:04:05.000Z"`},
		{`"2026-01-02T00:30:00+05:30"`, `"2026-01-01T19:00:00.000Z"`},
		{`"0001-01-01T00:00:00Z"`, `"0001-01-01T00:00:00.000Z"`},
		{`"9999-12-31T23:59:59.999Z"`, `"9999-12-31T23:59:59.999Z"`},
	} {
		t.Run(tc.in[1:len(tc.in)-1], func(t *testing.T) {
			var v spec.Time
			require.NoError(t, json.Unmarshal([]byte(tc.in), &v), tc.in)
			require.Equal(t, time.UTC, v.Location(), tc.in)
			b, err := json.Marshal(v)
			require.NoError(t, err)
			require.Equal(t, tc.out, string(b), tc.in)
			// What Time writes, CheckTimestampMillis accepts, and it reads back
			// unchanged.
			require.NoError(t, spec.CheckTimestampMillis(tc.out[1:len(tc.out)-1]))
			var again spec.Time
			require.NoError(t, json.Unmarshal(b, &again))
			b2, err := json.Marshal(again)
			require.NoError(t, err)
			require.Equal(t, string(b), string(b2))
		})
	}

	for _, in := range []string{`"2026-01-02t03:04:05Z"`, `"2026-01-02T03:04:05z"`, `"2026-01-02 03:04:05Z"`, `"2026-01-02T03:04:05"`,
		`"2026-13-02T03:04:05Z"`, `""`, `1767323045`, `true`, `{}`, `"2026-01-02T03:04:05Z`} {
		var v spec.Time
		require.Error(t, json.Unmarshal([]byte(in), &v), in)
	}
	// null leaves the value alone, like encoding/json does for other types.
	v := ts("2026-01-02T03:04:05Z")
	require.NoError(t, json.Unmarshal([]byte(`null`), &v))
	require.Equal(t, "2026-01-02T03:04:05.000Z", v.String())

	// A time outside RFC 3339's years cannot be written.
	_, err := json.Marshal(spec.NewTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)))
	require.Error(t, err)
	_, err = json.Marshal(spec.NewTime(time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)))
	require.Error(t, err)
}

func TestTimeInNonUTCLocationMarshalsUTC(t *testing.T) {
	t.Parallel()
	// Time{...} built directly, without NewTime, is still written in UTC.
	v := spec.Time{Time: time.Date(2026, 1, 2, 5, 4, 5, 678_000_000, time.FixedZone("", 2*3600))}
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.Equal(t, `"2026-01-02T03:04:05.678Z"`, string(b))
}

func TestZeroTimeOmitted(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(spec.Conversation{ID: "c1", StartedAt: ts("2026-01-02T03:04:05Z")})
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"c1","startedAt":"2026-01-02T03:04:05.000Z"}`, string(b))

	b, err = json.Marshal(spec.Message{Role: "user"})
	require.NoError(t, err)
	require.JSONEq(t, `{"role":"user"}`, string(b))

	// A required timestamp (no omitzero) is written even when zero.
	b, err = json.Marshal(spec.Event{ID: "e1"})
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"e1","occurredAt":"0001-01-01T00:00:00.000Z"}`, string(b))

	var c spec.Conversation
	require.NoError(t, json.Unmarshal([]byte(`{"id":"c1","startedAt":"2026-01-02T03:04:05Z"}`), &c))
	require.True(t, c.UpdatedAt.IsZero())
	require.False(t, c.Deleted())
	require.NoError(t, json.Unmarshal([]byte(`{"id":"c1","startedAt":"2026-01-02T03:04:05Z","deletedAt":"2026-01-03T00:00:00Z"}`), &c))
	require.True(t, c.Deleted())
}

func TestNullable(t *testing.T) {
	t.Parallel()
	type body struct {
		CategoryID spec.Nullable[string] `json:"categoryId,omitzero"`
		Count      spec.Nullable[int]    `json:"count,omitzero"`
	}
	for _, tc := range []struct {
		name     string
		in       string
		category spec.Nullable[string]
		count    spec.Nullable[int]
		out      string
	}{
		{"both omitted", `{}`, spec.Nullable[string]{}, spec.Nullable[int]{}, `{}`},
		{"category null", `{"categoryId":null}`, spec.Null[string](), spec.Nullable[int]{}, `{"categoryId":null}`},
		{"category value", `{"categoryId":"` + categoryID + `"}`, spec.Some(categoryID), spec.Nullable[int]{}, `{"categoryId":"` + categoryID + `"}`},
		{"zero values", `{"categoryId":"","count":0}`, spec.Some(""), spec.Some(0), `{"categoryId":"","count":0}`},
		{"count null", `{"count": null }`, spec.Nullable[string]{}, spec.Null[int](), `{"count":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b body
			require.NoError(t, json.Unmarshal([]byte(tc.in), &b), tc.in)
			require.Equal(t, tc.category, b.CategoryID, tc.in)
			require.Equal(t, tc.count, b.Count, tc.in)
			out, err := json.Marshal(b)
			require.NoError(t, err)
			require.JSONEq(t, tc.out, string(out), tc.in)
		})
	}

	// A null after a value clears the value.
	b := body{CategoryID: spec.Some("x")}
	require.NoError(t, json.Unmarshal([]byte(`{"categoryId":null}`), &b))
	require.Equal(t, spec.Null[string](), b.CategoryID)

	var n spec.Nullable[int]
	require.Error(t, json.Unmarshal([]byte(`"seven"`), &n))

	require.True(t, spec.Nullable[string]{}.IsZero())
	require.False(t, spec.Null[string]().IsZero())
	require.False(t, spec.Some("").IsZero())
	require.Nil(t, spec.Null[string]().Ptr())
	require.NotNil(t, spec.Some("a").Ptr())
	require.Equal(t, "a", *spec.Some("a").Ptr())

	// Patch body: omitted, null and value are three different documents.
	for _, tc := range []struct {
		name string
		p    spec.InstructionPatch
		out  string
	}{
		{"patch empty", spec.InstructionPatch{}, `{}`},
		{"patch category null", spec.InstructionPatch{CategoryID: spec.Null[string]()}, `{"categoryId":null}`},
		{"patch category value", spec.InstructionPatch{CategoryID: spec.Some(categoryID)}, `{"categoryId":"` + categoryID + `"}`},
		{"patch assessment null and usedBy empty", spec.InstructionPatch{AssessmentID: spec.Null[string](), UsedBy: &[]string{}}, `{"assessmentId":null,"usedBy":[]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := json.Marshal(tc.p)
			require.NoError(t, err)
			require.JSONEq(t, tc.out, string(out))
			findings, err := spec.Validate("instruction-patch", out)
			require.NoError(t, err)
			require.Empty(t, findings, "%s", out)
			var back spec.InstructionPatch
			require.NoError(t, json.Unmarshal(out, &back))
			require.Equal(t, tc.p, back)
		})
	}
}

func TestParametersKeepUnknownKeys(t *testing.T) {
	t.Parallel()
	in := `{"temperature":0.7,"topP":1,"maxTokens":512,"presencePenalty":0.5,"stop":["\n"],"response_format":{"type":"json_object"}}`
	var p spec.Parameters
	require.NoError(t, json.Unmarshal([]byte(in), &p))
	require.NotNil(t, p.Temperature)
	require.NotNil(t, p.TopP)
	require.NotNil(t, p.MaxTokens)
	require.InDelta(t, 0.7, *p.Temperature, 0)
	require.InDelta(t, 1.0, *p.TopP, 0)
	require.Equal(t, int64(512), *p.MaxTokens)
	require.Len(t, p.Extra, 3)
	require.NotContains(t, p.Extra, "temperature")
	require.JSONEq(t, `{"type":"json_object"}`, string(p.Extra["response_format"]))
	out, err := json.Marshal(p)
	require.NoError(t, err)
	require.JSONEq(t, in, string(out))

	// Through a pointer field, as in Conversation and Assistant.
	c := spec.Conversation{ID: "c1", StartedAt: ts("2026-01-02T03:04:05Z"), Parameters: &p}
	out, err = json.Marshal(c)
	require.NoError(t, err)
	var back spec.Conversation
	require.NoError(t, json.Unmarshal(out, &back))
	require.Equal(t, p, *back.Parameters)

	// Only known keys, and only unknown keys.
	for _, in := range []string{`{}`, `{"temperature":0}`, `{"seed":42}`} {
		var p spec.Parameters
		require.NoError(t, json.Unmarshal([]byte(in), &p))
		out, err := json.Marshal(p)
		require.NoError(t, err)
		require.JSONEq(t, in, string(out))
	}
	var empty spec.Parameters
	require.NoError(t, json.Unmarshal([]byte(`{"topP":0.9}`), &empty))
	require.Nil(t, empty.Extra)

	// A known key of the wrong type is an error, not an unknown key.
	require.Error(t, json.Unmarshal([]byte(`{"temperature":"hot"}`), &p))
	require.Error(t, json.Unmarshal([]byte(`[1]`), &p))
}

func TestListEncoding(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(spec.List[spec.Conversation]{})
	require.NoError(t, err)
	require.JSONEq(t, `{"data":[],"hasMore":false,"nextCursor":null}`, string(b))
	findings, err := spec.Validate("conversation-list", b)
	require.NoError(t, err)
	require.Empty(t, findings)

	b, err = json.Marshal(&spec.List[spec.Event]{Data: nil})
	require.NoError(t, err, "through a pointer")
	require.JSONEq(t, `{"data":[],"hasMore":false,"nextCursor":null}`, string(b))

	b, err = json.Marshal(spec.List[spec.UsageBucket]{Data: []spec.UsageBucket{fullUsageBucket()}, HasMore: true, NextCursor: cursor("abc")})
	require.NoError(t, err)
	findings, err = spec.Validate("usage-list", b)
	require.NoError(t, err)
	require.Empty(t, findings)
	var back spec.List[spec.UsageBucket]
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, "abc", *back.NextCursor)
	require.True(t, back.HasMore)
	require.Equal(t, fullUsageBucket(), back.Data[0])

	// Inside another value, the nil slice is still written as [].
	b, err = json.Marshal(map[string]any{"page": spec.List[string]{}})
	require.NoError(t, err)
	require.JSONEq(t, `{"page":{"data":[],"hasMore":false,"nextCursor":null}}`, string(b))
}
