package provider

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJoinedJSON: records laid out as the list serves them, in one buffer,
// are written as they are; anything else is not taken for such a layout.
func TestJoinedJSON(t *testing.T) {
	t.Parallel()
	docs := []string{`{"id":"a"}`, `{"id":"bb"}`, `{"id":"c"}`}
	joined := strings.Join(docs, ",")
	laid := func(buf []byte, sep byte, capped bool) []RawRecord {
		var items []RawRecord
		start := 0
		for i, d := range docs {
			end := start + len(d)
			if i < len(docs)-1 {
				buf[end] = sep
			}
			r := RawRecord{JSON: json.RawMessage(buf[start:end])}
			if capped {
				r.JSON = json.RawMessage(buf[start:end:end])
			}
			items = append(items, r)
			start = end + 1
		}
		return items
	}
	buf := []byte(joined)
	span, ok := joinedJSON(laid(buf, ',', false))
	require.True(t, ok)
	require.Equal(t, joined, string(span))
	require.Same(t, &buf[0], &span[0], "the span is the source's bytes, not a copy")

	span, ok = joinedJSON(laid([]byte(joined), ',', false)[:2])
	require.True(t, ok, "a page cut short by the byte budget")
	require.Equal(t, docs[0]+","+docs[1], string(span))

	for name, items := range map[string][]RawRecord{
		"capped slices":      laid([]byte(joined), ',', true),
		"another separator":  laid([]byte(joined), ' ', false),
		"separate buffers":   {{JSON: json.RawMessage(docs[0])}, {JSON: json.RawMessage(docs[1])}},
		"out of order":       func() []RawRecord { it := laid([]byte(joined), ',', false); it[1], it[2] = it[2], it[1]; return it }(),
		"an empty record":    {{JSON: json.RawMessage(buf[0:0])}},
		"no records":         nil,
		"a record repeated":  func() []RawRecord { it := laid([]byte(joined), ',', false); return []RawRecord{it[0], it[0]} }(),
		"a gap of two bytes": {{JSON: json.RawMessage([]byte(`{},,{}`)[0:2])}, {JSON: json.RawMessage([]byte(`{},,{}`)[4:6])}},
	} {
		_, ok := joinedJSON(items)
		require.False(t, ok, name)
	}

	// The envelope is the same either way.
	for _, items := range [][]RawRecord{laid([]byte(joined), ',', false), laid([]byte(joined), ',', true)} {
		rec := httptest.NewRecorder()
		require.NoError(t, writeRawPage(rec, Page[RawRecord]{Items: items, HasMore: true}, 10, 1<<20, func(Key) string { return "CUR" }))
		require.Equal(t, `{"data":[`+joined+`],"hasMore":true,"nextCursor":"CUR"}`, rec.Body.String())
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		require.Equal(t, strconv.Itoa(rec.Body.Len()), rec.Header().Get("Content-Length"))
	}
}
