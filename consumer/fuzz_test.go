package consumer

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeEnvelope feeds list answers of any shape: decodeEnvelope must
// return a page or an error, never panic, and a page's records are JSON.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"data":[{"id":"a"}],"hasMore":true,"nextCursor":"c"}`,
		`{"data":[],"hasMore":false,"nextCursor":null}`,
		`[{"id":"a"},null]`,
		`{"data":[1,"x",null],"nextCursor":"c"}`,
		`{"data":{}}`, `{"data":[{"id":"a"`, ``, `null`, `{"hasMore":"yes"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := decodeEnvelope(body)
		if err != nil {
			return
		}
		for i, r := range p.Records {
			if !json.Valid(r) {
				t.Fatalf("record %d is not JSON: %q", i, r)
			}
		}
		if p.HasMore && p.NextCursor == "" && !p.Paginated {
			t.Fatal("hasMore without pagination")
		}
	})
}

// FuzzParseRecord feeds records of any content to every resource's parser:
// each is either kept, with an id and a time, or quarantined with a reason
// and an id to file it under.
func FuzzParseRecord(f *testing.F) {
	for _, s := range []string{
		`{"id":"c1","startedAt":"2026-01-01T10:00:00.000Z","updatedAt":"2026-01-01T10:00:00.000Z"}`,
		`{"id":"e1","occurredAt":"2026-01-01T10:00:00Z","type":"x","category":"Other"}`,
		`{"id":"a1","name":"n","createdAt":"2026-01-01T10:00:00Z"}`,
		`{"startAt":"2026-01-01T10:00:00Z","endAt":"2026-01-01T11:00:00Z","granularity":"hour","dimensions":{"model":"m"},"metrics":{"requests":1}}`,
		`{"id":"nul\u0000","startedAt":"2026-01-01T10:00:00Z"}`,
		"{\"id\":\"\xff\"}", `null`, `[]`, `{"id":1}`, `{"metrics":{"requests":1e300}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, r := range Resources {
			p := parseRecord(r, raw)
			if p.reason != "" {
				if p.id == "" {
					t.Fatalf("%s: quarantined without an id: %q", r, raw)
				}
				continue
			}
			if p.rec.ID == "" || p.rec.Time.IsZero() && r != Usage {
				t.Fatalf("%s: kept without id or time: %q", r, raw)
			}
			if !json.Valid(p.rec.JSON) {
				t.Fatalf("%s: kept a record that is not JSON", r)
			}
		}
	})
}
