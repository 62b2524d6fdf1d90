package policy_test

import (
	"context"
	"fmt"

	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/spec"
)

func Example() {
	instructions := []spec.Instruction{
		{
			ID: "iban", Title: "Bank account numbers", Action: spec.ActionBlock, Criticality: spec.CriticalityLow,
			Trigger:        spec.RegexTrigger(`\b[A-Z]{2}\d{2}[A-Z0-9]{11,30}\b`, true),
			AllowRedaction: true,
		},
		{
			ID: "codenames", Title: "Project code names", Action: spec.ActionBlock, Criticality: spec.CriticalityHigh,
			Trigger: spec.StringMatchTrigger([]string{"Falcon", "Blue Heron"}, false),
		},
		{
			ID: "test-iban", Title: "The documentation's test IBAN", Action: spec.ActionAllow, Criticality: spec.CriticalityLow,
			Trigger: spec.StringMatchTrigger([]string{"DE00123456780000000000"}, true),
		},
	}
	set, err := policy.Compile(instructions, policy.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for _, messages := range [][]string{
		{"Pay the invoice to DE89370400440532013000, thanks.", "Or use DE00123456780000000000 to test."},
		{"What is the status of project falcon?"},
		{"Write a haiku about autumn."},
	} {
		res, err := set.Evaluate(ctx, messages)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.Outcome)
		for _, r := range res.Reasons {
			fmt.Printf("  %s %s", r.Action, r.InstructionID)
			for _, m := range r.Matches {
				fmt.Printf(" [%d %d-%d]", m.MessageIndex, m.Start, m.End)
			}
			fmt.Println()
		}
		if res.Redacted != nil {
			fmt.Printf("  redacted: %q\n", res.Redacted)
		}
	}
	// Output:
	// redacted
	//   Block iban [0 19-41]
	//   Allow test-iban [1 7-29]
	//   redacted: ["Pay the invoice to [REDACTED], thanks." "Or use DE00123456780000000000 to test."]
	// requires_intervention
	//   Block codenames [0 30-36]
	// approved
}

func ExampleCache() {
	cache := policy.NewCache(policy.Options{RedactionMark: "***"}, 100)
	instructions := []spec.Instruction{{
		ID: "email", Title: "E-mail addresses", Action: spec.ActionBlock, Criticality: spec.CriticalityLow,
		Trigger:        spec.RegexTrigger(`[\pL\d.+-]+@[\w-]+(?:\.[\w-]+)+`, true),
		AllowRedaction: true,
	}}
	set, err := cache.Get("agent-1", instructions) // compiled once, reused until the instructions change
	if err != nil {
		fmt.Println(err)
		return
	}
	res, _ := set.Evaluate(context.Background(), []string{"Écrivez à zoë@example.fr."})
	fmt.Println(res.Outcome, res.Redacted[0], res.Reasons[0].Matches[0].Start, res.Reasons[0].Matches[0].End)
	// Output:
	// redacted Écrivez à ***. 10 24
}
