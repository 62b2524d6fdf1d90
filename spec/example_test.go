package spec_test

import (
	"fmt"

	"github.com/aiusage/kit/spec"
)

func ExampleValidate() {
	doc := []byte(`{
		"id": "conv_1",
		"startedAt": "2026-01-02T04:04:05+01:00",
		"messages": [{"role": "developer", "content": "Be brief."}],
		"usage": {"inputTokens": -3}
	}`)
	findings, err := spec.Validate("conversation", doc)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range findings {
		fmt.Println(f)
	}
	fmt.Println("valid:", spec.Valid(findings))

	// The consumer keeps unknown enum values: in Lenient mode they are no
	// finding at all.
	findings, _ = spec.Validate("conversation", doc, spec.WithMode(spec.Lenient))
	fmt.Println("lenient findings:", len(findings))
	// Output:
	// /messages/0/role: warning: "developer" is not a value known to this version of the specification ('user', 'assistant', 'system', 'tool'); later versions may add it
	// /startedAt: "2026-01-02T04:04:05+01:00" is not in UTC: write it with Z instead of an offset, for example 2026-01-02T03:04:05Z
	// /usage/inputTokens: minimum: got -3, want 0
	// valid: false
	// lenient findings: 2
}

func ExampleCheckTimestamp() {
	for _, s := range []string{
		"2026-01-02T03:04:05Z",
		"2026-01-02T03:04:05.678Z",
		"2026-01-02T04:04:05+01:00",
		"2026-01-02 03:04:05Z",
	} {
		if err := spec.CheckTimestamp(s); err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(s, "ok")
	}
	// Output:
	// 2026-01-02T03:04:05Z ok
	// 2026-01-02T03:04:05.678Z ok
	// "2026-01-02T04:04:05+01:00" is not in UTC: write it with Z instead of an offset, for example 2026-01-02T03:04:05Z
	// "2026-01-02 03:04:05Z" is not an RFC 3339 timestamp such as 2026-01-02T03:04:05Z
}

func ExampleCheckTimestampMillis() {
	fmt.Println(spec.CheckTimestampMillis("2026-01-02T03:04:05.678Z"))
	fmt.Println(spec.CheckTimestampMillis("2026-01-02T03:04:05Z"))
	// Output:
	// <nil>
	// "2026-01-02T03:04:05Z" must have exactly three fractional digits (milliseconds), for example 2026-01-02T03:04:05.678Z
}

func ExampleListSchema() {
	for _, record := range []string{"conversation", "usage-bucket", "instruction"} {
		list, ok := spec.ListSchema(record)
		fmt.Println(record, "->", list, ok)
	}
	// Output:
	// conversation -> conversation-list true
	// usage-bucket -> usage-list true
	// instruction ->  false
}

func ExampleValidateValue() {
	for _, doc := range []any{
		map[string]any{"id": "c1", "startedAt": "2026-01-02T03:04:05Z", "messages": []any{map[string]any{"role": "developer"}}},
		map[string]any{"id": "c2", "startedAt": "2026-01-02T04:04:05+01:00"},
	} {
		findings, err := spec.ValidateValue("conversation", doc, spec.WithMode(spec.Lenient))
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(spec.Valid(findings), findings)
	}
	// Output:
	// true []
	// false [/startedAt: "2026-01-02T04:04:05+01:00" is not in UTC: write it with Z instead of an offset, for example 2026-01-02T03:04:05Z]
}
