package schemacheck_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
	"github.com/aiusage/kit/spec/internal/schemacheck"
)

// recordSchemas are the schemas of the records a consumer receives, each of
// which must have a fast check.
var recordSchemas = []string{"conversation", "assistant", "event", "usage-bucket"}

// records returns the valid records of testdata/records by schema: for each
// schema a small base (<schema>.base.json, whose mutations the fuzz test
// adds), the specification's examples and realistic records.
func records(t testing.TB) map[string][][]byte {
	t.Helper()
	out := map[string][][]byte{}
	for _, name := range recordSchemas {
		files, err := filepath.Glob(filepath.Join("testdata", "records", name+"-*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, files, name)
		for _, f := range append(files, filepath.Join("testdata", "records", name+".base.json")) {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			out[name] = append(out[name], b)
		}
	}
	return out
}

func base(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "records", name+".base.json"))
	require.NoError(t, err)
	return b
}

func TestRecordSchemasCompile(t *testing.T) {
	t.Parallel()
	for _, name := range recordSchemas {
		_, err := schemacheck.Compile(spec.SchemaBaseURL+name+".json", embedded)
		require.NoError(t, err, name)
	}
}

func TestCompileRefuses(t *testing.T) {
	t.Parallel()
	for name, keyword := range map[string]string{
		"instruction-patch": "if",          // before anyOf of categoryId
		"webhook-list":      "uniqueItems", // events
		"organisation":      "format",      // uuid
		"list-envelope":     "",            // if/then/else, x-message: either may be met first
	} {
		_, err := schemacheck.Compile(spec.SchemaBaseURL+name+".json", embedded)
		require.ErrorIs(t, err, schemacheck.ErrUnsupported, name)
		require.Contains(t, err.Error(), `"`+keyword, name)
	}
	_, err := schemacheck.Compile(spec.SchemaBaseURL+"nope.json", embedded)
	require.ErrorIs(t, err, schemacheck.ErrUnsupported)
	var c *schemacheck.Checker
	require.False(t, c.Check(map[string]any{}, true), "a nil Checker says no")
}

// mutationValues replace one value of a valid document at a time: the
// near misses of every keyword the record schemas use.
var mutationValues = []string{
	`null`, `true`, `0`, `-1`, `-0`, `1.5`, `12.0`, `1e300`, `-1e-300`, `9007199254740993`, `""`, `"x"`, `"é"`, `{}`, `[]`, `[1]`, `["x"]`, `{"id":1}`,
	`"2026-03-09T08:15:00Z"`, `"2026-03-09T08:15:00.123456789Z"`, `"2026-03-09T08:15:00.1234567890Z"`, `"2026-03-09T08:15:00+00:00"`,
	`"2026-03-09T08:15:00z"`, `"2026-03-09t08:15:00Z"`, `"2026-03-09 08:15:00Z"`, `"2026-02-29T08:15:00Z"`, `"2024-02-29T23:59:59Z"`,
	`"2026-13-09T08:15:00Z"`, `"2026-03-09T24:00:00Z"`, `"2026-03-09T08:60:00Z"`, `"2016-12-31T23:59:60Z"`, `"0000-02-29T00:00:00Z"`,
	`"2026-03-09T08:15:00.Z"`, `"2026-03-09T08:15:00"`,
	`"user"`, `"developer"`, `"User"`, `"Authentication"`, `"authentication"`, `"hour"`, `"week"`, `"team"`, `"tenant"`, `"builtin"`, `"uploaded"`,
}

// mutations returns doc with every value (and every member) replaced by
// each of mutationValues, deleted, or joined by an unknown member.
func mutations(t testing.TB, doc []byte) [][]byte {
	t.Helper()
	var root any
	require.NoError(t, json.Unmarshal(doc, &root))
	var out [][]byte
	emit := func() {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(root))
		out = append(out, bytes.TrimSpace(buf.Bytes()))
	}
	var walk func(v any)
	walk = func(v any) {
		switch c := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(c))
			for k := range c {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				old := c[k]
				for _, m := range mutationValues {
					var nv any
					require.NoError(t, json.Unmarshal([]byte(m), &nv))
					c[k] = nv
					emit()
				}
				delete(c, k)
				emit()
				c[k] = old
				walk(old)
			}
			c["zzUnknown"] = "x"
			emit()
			delete(c, "zzUnknown")
		case []any:
			for i, e := range c {
				for _, m := range []string{`null`, `"x"`, `{}`, `{"role":"developer"}`} {
					var nv any
					require.NoError(t, json.Unmarshal([]byte(m), &nv))
					c[i] = nv
					emit()
				}
				c[i] = e
				walk(e)
			}
		}
	}
	walk(root)
	return out
}

// agree checks that the checker never accepts what the library rejects.
// With complete also set, it checks the converse: the checker is meant to
// be exact for documents decoded into float64 numbers.
func agree(t *testing.T, name string, doc any, complete bool) {
	t.Helper()
	l, err := loadLibrary()
	require.NoError(t, err)
	for _, lenient := range []bool{false, true} {
		fast := checker(t, name).Check(doc, lenient)
		nothing := l.findsNothing(t, name, doc, lenient)
		if fast {
			require.True(t, nothing, "%s (lenient %v): the checker accepts what the library reports: %#v", name, lenient, doc)
		}
		if complete {
			require.Equal(t, nothing, fast, "%s (lenient %v): the checker rejects what the library accepts: %#v", name, lenient, doc)
		}
	}
}

// FuzzCheck holds the checker to the library: a yes of the checker is never
// a finding of the library, for documents decoded with float64 or
// json.Number numbers, in both modes; for float64 numbers the two agree. The
// seeds are the records of testdata/records, every near miss of the bases
// (a few thousand inputs, run by every go test), and testdata/fuzz/FuzzCheck.
func FuzzCheck(f *testing.F) {
	for _, name := range recordSchemas {
		for _, r := range records(f)[name] {
			f.Add(r)
		}
		for _, m := range mutations(f, base(f, name)) {
			f.Add(m)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var doc any
		if json.Unmarshal(data, &doc) != nil {
			return
		}
		var withNumbers any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&withNumbers))
		for _, name := range recordSchemas {
			agree(t, name, doc, true)
			agree(t, name, withNumbers, false)
		}
	})
}

// TestAcceptsRecords makes sure the fast path is taken on realistic records:
// the checker accepts every record of testdata/records, in both modes.
func TestAcceptsRecords(t *testing.T) {
	t.Parallel()
	l, err := loadLibrary()
	require.NoError(t, err)
	n := 0
	for name, docs := range records(t) {
		for _, b := range docs {
			var doc any
			require.NoError(t, json.Unmarshal(b, &doc))
			require.True(t, l.findsNothing(t, name, doc, false), "%s: a record is not valid: %s", name, b)
			for _, lenient := range []bool{false, true} {
				require.True(t, checker(t, name).Check(doc, lenient), "%s (lenient %v): %s", name, lenient, b)
			}
			n++
		}
	}
	require.GreaterOrEqual(t, n, 30)
}

// TestNumbers covers json.Number, which the checker handles
// conservatively: never accepting what the library rejects.
func TestNumbers(t *testing.T) {
	t.Parallel()
	l, err := loadLibrary()
	require.NoError(t, err)
	decode := func(s string) any {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		require.NoError(t, dec.Decode(&v))
		return v
	}
	c := checker(t, "usage-bucket")
	for _, tc := range []struct {
		num  string
		fast bool // the checker's answer; the library accepts whenever it does
	}{
		{"0", true}, {"12", true}, {"-0", true}, {"9007199254740993", true}, {"1e3", false}, {"12.0", false},
		{"-1", false}, {"0.0000000000000000000000000001", false}, {"-0.0000000000000000000000000001", false}, {"1.5", false},
	} {
		doc := decode(`{"startAt":"2026-03-09T00:00:00Z","metrics":{"requests":` + tc.num + `}}`)
		require.Equal(t, tc.fast, c.Check(doc, false), tc.num)
		if tc.fast {
			require.True(t, l.findsNothing(t, "usage-bucket", doc, false), tc.num)
		}
		// cost is a number: bounds without the integer requirement.
		doc = decode(`{"startAt":"2026-03-09T00:00:00Z","metrics":{"cost":` + tc.num + `}}`)
		if c.Check(doc, false) {
			require.True(t, l.findsNothing(t, "usage-bucket", doc, false), "cost %s", tc.num)
		}
	}
}

// BenchmarkCheck checks the conversations of testdata/records one after
// another, decoded by encoding/json, with the checker and with the library,
// the validation it shortcuts.
func BenchmarkCheck(b *testing.B) {
	var docs []any
	for _, r := range records(b)["conversation"] {
		var doc any
		if err := json.Unmarshal(r, &doc); err != nil {
			b.Fatal(err)
		}
		docs = append(docs, doc)
	}
	l, err := loadLibrary()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("schemacheck", func(b *testing.B) {
		c := checker(b, "conversation")
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range docs {
				if !c.Check(d, true) {
					b.Fatal("the checker refuses a record")
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(docs)), "ns/record")
	})
	b.Run("jsonschema", func(b *testing.B) {
		s := l.schemas["conversation"]
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range docs {
				if err := s.Validate(d); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(docs)), "ns/record")
	})
}
