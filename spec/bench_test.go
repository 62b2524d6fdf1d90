package spec_test

import (
	"encoding/json"
	"testing"

	"github.com/aiusage/kit/spec"
)

// BenchmarkValidateConversationPage validates a page of 100 realistic
// conversations (about the 170 KB the performance targets assume), as the conformance
// suite and the consumer do for every page they read.
func BenchmarkValidateConversationPage(b *testing.B) {
	page, err := json.Marshal(conversationPage(100))
	if err != nil {
		b.Fatal(err)
	}
	findings, err := spec.Validate("conversation-list", page)
	if err != nil || len(findings) != 0 {
		b.Fatalf("the page is not valid: %v %v", err, findings)
	}
	benchValidate(b, page)
}

// BenchmarkValidateConversationPageLenient is the consumer's mode.
func BenchmarkValidateConversationPageLenient(b *testing.B) {
	page, err := json.Marshal(conversationPage(100))
	if err != nil {
		b.Fatal(err)
	}
	benchValidate(b, page, spec.WithMode(spec.Lenient))
}

// BenchmarkValidateInvalidPage measures the cost of collecting findings:
// every conversation of the page has a bad timestamp and an unknown role.
func BenchmarkValidateInvalidPage(b *testing.B) {
	p := conversationPage(100)
	for i := range p.Data {
		p.Data[i].Messages[0].Role = "developer"
	}
	page, err := json.Marshal(p)
	if err != nil {
		b.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(page, &doc); err != nil {
		b.Fatal(err)
	}
	for _, c := range doc["data"].([]any) {
		c.(map[string]any)["startedAt"] = "2026-03-09 08:15:00Z"
	}
	page, _ = json.Marshal(doc)
	findings, _ := spec.Validate("conversation-list", page)
	if len(findings) != 200 {
		b.Fatalf("want 200 findings, got %d", len(findings))
	}
	benchValidate(b, page)
}

// TestConversationPageSize keeps the benchmark's page realistic.
func TestConversationPageSize(t *testing.T) {
	t.Parallel()
	page, err := json.Marshal(conversationPage(100))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(page); n < 120_000 || n > 400_000 {
		t.Fatalf("a page of 100 conversations is %d bytes; the performance targets assume about 170 KB", n)
	}
}

// BenchmarkDecodeConversationPage is the baseline of the validation
// benchmarks: decoding the same page into generic JSON values, which any
// validator has to do first. make bench reports Validate as a ratio of it.
func BenchmarkDecodeConversationPage(b *testing.B) {
	page, err := json.Marshal(conversationPage(100))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(page, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// benchValidate measures spec.Validate of page with opts.
func benchValidate(b *testing.B, page []byte, opts ...spec.ValidateOption) {
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := spec.Validate("conversation-list", page, opts...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateConversationRecords validates the records of a page one
// by one, as the consumer does with every record it receives.
func BenchmarkValidateConversationRecords(b *testing.B) {
	records := decodedRecords(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range records {
			if _, err := spec.ValidateValue("conversation", r, spec.WithMode(spec.Lenient)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// decodedRecords returns the conversations of a page of 100, each decoded
// into any by encoding/json.
func decodedRecords(b *testing.B) []any {
	b.Helper()
	var out []any
	for _, c := range conversationPage(100).Data {
		raw, err := json.Marshal(c)
		if err != nil {
			b.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			b.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}
