package policy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aiusage/kit/spec"
)

// worstAllowedPattern is at the limit of CheckPattern (about 2,000
// instructions), has no literal to prefilter on, and keeps every state alive
// over a text of letters.
const worstAllowedPattern = `[a-z]{0,998}[^a-z]`

// BenchmarkBudget reports what the worst allowed pattern costs per MiB of
// text without a budget (measured over 16 KiB: a MiB takes tens of
// seconds), and how long after its budget an evaluation of 1 MiB stops.
func BenchmarkBudget(b *testing.B) {
	if err := CheckPattern(worstAllowedPattern, true); err != nil {
		b.Fatal(err)
	}
	ins := []spec.Instruction{{ID: "w", Title: "worst", Action: spec.ActionBlock, Trigger: spec.RegexTrigger(worstAllowedPattern, true)}}
	b.Run("unbudgeted", func(b *testing.B) {
		set, err := Compile(ins, Options{Budget: -1})
		if err != nil {
			b.Fatal(err)
		}
		text := []string{strings.Repeat("a", 16<<10)}
		start := time.Now()
		for b.Loop() {
			if _, err := set.Evaluate(context.Background(), text); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(time.Since(start).Seconds()/float64(b.N)*64, "s/MiB")
	})
	b.Run("budget-100ms", func(b *testing.B) {
		const budget = 100 * time.Millisecond
		set, err := Compile(ins, Options{Budget: budget})
		if err != nil {
			b.Fatal(err)
		}
		text := []string{strings.Repeat("a", 1<<20)}
		var past time.Duration
		for b.Loop() {
			start := time.Now()
			if _, err := set.Evaluate(context.Background(), text); err == nil {
				b.Fatal("the evaluation fit its budget")
			}
			past += time.Since(start) - budget
		}
		b.ReportMetric(float64(past.Milliseconds())/float64(b.N), "ms-past-budget")
	})
}
