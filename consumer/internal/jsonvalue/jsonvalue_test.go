package jsonvalue

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// sameValue reports whether a and b, decoded JSON values, are equal, telling
// -0 from 0 (reflect.DeepEqual does not).
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) || x == nil || y == nil {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) || x == nil || y == nil {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case string, bool, nil:
		return a == b
	}
	return false
}

// records returns the realistic records of testdata/records: conversations,
// assistants, events and usage buckets as a provider serves them.
func records(t testing.TB) [][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "records", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		out = append(out, b)
	}
	return out
}

// FuzzDecode holds Decode to encoding/json: on valid UTF-8 it returns the
// value and the error json.Unmarshal returns, and whenever its own decoder
// decodes a document, json.Unmarshal decodes it to the same value. The seeds
// are the records of testdata/records and the edge cases of
// testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	for _, r := range records(f) {
		f.Add(r)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !utf8.Valid(raw) {
			return // Decode's precondition
		}
		var want any
		wantErr := json.Unmarshal(raw, &want)
		if fast, ok := decodeFast(raw); ok {
			require.NoError(t, wantErr, "the fast decoder decodes %q", raw)
			require.True(t, sameValue(fast, want), "decodeFast(%q) = %#v, json.Unmarshal %#v", raw, fast, want)
		}
		got, err := Decode(raw)
		if wantErr != nil {
			require.EqualError(t, err, wantErr.Error())
			require.Nil(t, got)
			return
		}
		require.NoError(t, err)
		require.True(t, sameValue(got, want), "Decode(%q) = %#v, json.Unmarshal %#v", raw, got, want)
	})
}

// TestFastPathTaken: the fast decoder does not leave realistic records (nor
// common escapes) to json.Unmarshal.
func TestFastPathTaken(t *testing.T) {
	t.Parallel()
	docs := append(records(t), []byte(`{"a":"\u00e9\n\ud83d\ude00","b":[1,-0,2.5e-3,1e300],"c":{},"d":[],"e":null,"f":true}`))
	for _, doc := range docs {
		got, ok := decodeFast(doc)
		require.True(t, ok, "the fast decoder refuses %s", doc)
		var want any
		require.NoError(t, json.Unmarshal(doc, &want))
		require.True(t, sameValue(got, want), "decodeFast(%s) = %#v, json.Unmarshal %#v", doc, got, want)
	}
}

// BenchmarkDecode decodes the realistic records of testdata/records one
// after another, with Decode and with json.Unmarshal into an any, the path it
// shortcuts.
func BenchmarkDecode(b *testing.B) {
	recs := records(b)
	size := 0
	for _, r := range recs {
		size += len(r)
	}
	b.Run("jsonvalue", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, r := range recs {
				if _, err := Decode(r); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, r := range recs {
				var v any
				if err := json.Unmarshal(r, &v); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
