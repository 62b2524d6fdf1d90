package spec_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aiusage/kit/spec"
)

// fuzzSchemas are the schemas FuzzValidate runs every input against: lists
// with if/then/else, closed and extensible enums, tagged unions, x-message,
// additionalProperties and both timestamp kinds.
var fuzzSchemas = []string{"conversation-list", "event", "usage-bucket", "instruction-create", "instruction-patch", "review-task", "organisation-list"}

func FuzzValidate(f *testing.F) {
	for _, doc := range validBases {
		f.Add([]byte(doc))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "examples", "*.json"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		``, `null`, `0`, `-1e400`, `"x"`, `[]`, `{}`, `[{}]`, `{"data":null,"hasMore":true}`,
		`{"id":"c","startedAt":"2026-01-02T03:04:05+02:00","messages":[{"role":"developer"}]}`,
		`{"trigger":"Regex","allowRedaction":true}`, `{"trigger":{"type":"Semantic","text":"` + strings.Repeat("é", 2001) + `"}}`,
		`{"a~b/c":1,"":2}`, `{"data":[{"id":"x","startedAt":"2016-12-31T23:59:60Z"}],"hasMore":false}`,
		`{"categoryId":1e1000}`, `{"usage":{"inputTokens":1.0}}`, `{"id":"\ud800"}`, "{\"id\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		valid := json.Valid(data)
		var doc any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		isJSON := dec.Decode(&doc) == nil
		for _, schema := range fuzzSchemas {
			strict, err := spec.Validate(schema, data)
			if err != nil {
				if !errors.Is(err, spec.ErrInvalidJSON) || errors.Is(err, spec.ErrUnknownSchema) {
					t.Fatalf("%s: error %v is not ErrInvalidJSON", schema, err)
				}
				if strict != nil {
					t.Fatalf("%s: findings beside an error", schema)
				}
				if valid {
					t.Fatalf("%s: %v for valid JSON", schema, err)
				}
				continue
			}
			if !valid {
				t.Fatalf("%s: Validate accepted invalid JSON", schema)
			}
			lenient, err := spec.Validate(schema, data, spec.WithMode(spec.Lenient))
			if err != nil {
				t.Fatalf("%s: Lenient: %v", schema, err)
			}
			var withoutWarnings []spec.Finding
			for _, f := range strict {
				checkFinding(t, schema, doc, isJSON, f)
				if f.Level != spec.LevelWarning {
					withoutWarnings = append(withoutWarnings, f)
				}
			}
			if len(lenient) != len(withoutWarnings) {
				t.Fatalf("%s: Lenient %v is not Strict %v without warnings", schema, lenient, strict)
			}
			for i := range lenient {
				if lenient[i] != withoutWarnings[i] {
					t.Fatalf("%s: Lenient %v is not Strict %v without warnings", schema, lenient, strict)
				}
			}
		}
	})
}

func checkFinding(t *testing.T, schema string, doc any, isJSON bool, f spec.Finding) {
	t.Helper()
	if f.Pointer != "" && !strings.HasPrefix(f.Pointer, "/") {
		t.Fatalf("%s: pointer %q", schema, f.Pointer)
	}
	if f.Level != spec.LevelError && f.Level != spec.LevelWarning {
		t.Fatalf("%s: level %q", schema, f.Level)
	}
	if f.Message == "" || f.Keyword == "" {
		t.Fatalf("%s: finding without message or keyword: %#v", schema, f)
	}
	if f.Level == spec.LevelWarning && f.Keyword != "enum" {
		t.Fatalf("%s: warning that is not about an enum: %#v", schema, f)
	}
	if !isJSON {
		return
	}
	// The pointer names a value of the document; for a missing property,
	// its parent.
	p := f.Pointer
	if f.Keyword == "required" {
		p = p[:strings.LastIndex(p, "/")]
	}
	if _, ok := spec.ResolvePointer(doc, p); !ok {
		t.Fatalf("%s: pointer %q of %#v does not resolve", schema, f.Pointer, f)
	}
}

func FuzzParseTime(f *testing.F) {
	for _, tc := range timestampCases {
		f.Add(tc.in)
	}
	for _, s := range []string{"0000-01-01T00:00:00Z", "0000-01-01T00:00:00+01:00", "9999-12-31T23:59:59.999999999Z", "9999-12-31T23:59:59-01:00",
		"2026-01-02T03:04:05.000000001Z", "2026-01-02T03:04:05.9999999Z", "2026-01-02T03:04:05\u00e9Z", "2026-01-02T03:04:05\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parsed, perr := spec.ParseTime(s)
		cerr := spec.CheckTimestamp(s)
		merr := spec.CheckTimestampMillis(s)
		if perr == nil && parsed.Location() != time.UTC {
			t.Fatalf("ParseTime(%q) is not UTC", s)
		}
		if perr != nil && !parsed.IsZero() {
			t.Fatalf("ParseTime(%q) failed with a value", s)
		}
		if cerr == nil && perr != nil {
			t.Fatalf("CheckTimestamp accepts %q, ParseTime does not: %v", s, perr)
		}
		if merr == nil && cerr != nil {
			t.Fatalf("CheckTimestampMillis accepts %q, CheckTimestamp does not", s)
		}
		if cerr == nil {
			if !strings.HasSuffix(s, "Z") || s[10] != 'T' {
				t.Fatalf("CheckTimestamp accepts %q", s)
			}
			// Round trip through Time: the same instant at ms precision.
			b, err := json.Marshal(spec.NewTime(parsed))
			if err != nil {
				t.Fatalf("marshal %q: %v", s, err)
			}
			var back spec.Time
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("unmarshal %s: %v", b, err)
			}
			if !back.Equal(parsed.Truncate(time.Millisecond)) {
				t.Fatalf("%q -> %s -> %v", s, b, back)
			}
			if err := spec.CheckTimestampMillis(string(b[1 : len(b)-1])); err != nil {
				t.Fatalf("Time wrote %s: %v", b, err)
			}
			if merr == nil && string(b[1:len(b)-1]) != s {
				t.Fatalf("a millisecond timestamp %q is rewritten as %s", s, b)
			}
		}
		if perr == nil {
			// Any offset: the UTC instant may leave RFC 3339's years, and
			// then Time refuses to write it rather than write garbage.
			_, err := json.Marshal(spec.NewTime(parsed))
			if y := parsed.Year(); (y >= 0 && y <= 9999) != (err == nil) {
				t.Fatalf("marshal of %q (year %d): %v", s, y, err)
			}
		}

		// The schemas' timestamps agree with CheckTimestamp and
		// CheckTimestampMillis, and Validate reports their message.
		if !utf8.ValidString(s) {
			return
		}
		q, _ := json.Marshal(s)
		for _, tc := range []struct {
			schema, doc string
			err         error
		}{
			{"event", `{"id":"e","occurredAt":` + string(q) + `}`, cerr},
			{"review-task", `{"id":"` + taskID + `","status":"pending","createdAt":` + string(q) + `}`, merr},
		} {
			findings, err := spec.Validate(tc.schema, []byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if (tc.err == nil) != (len(findings) == 0) {
				t.Fatalf("%s: check says %v, Validate says %v for %q", tc.schema, tc.err, findings, s)
			}
			if tc.err != nil && (len(findings) != 1 || findings[0].Message != tc.err.Error()) {
				t.Fatalf("%s: findings %v for %q, want one with %q", tc.schema, findings, s, tc.err)
			}
		}
	})
}
