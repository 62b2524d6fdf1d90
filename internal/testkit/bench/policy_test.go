package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/spec"
)

// policyRegexes are the 50 Regex instructions of the policy benchmarks:
// common data-protection patterns and custom identifiers.
func policyRegexes() []string {
	out := []string{
		`\b[A-Z]{2}\d{2}[A-Z0-9]{11,30}\b`,                   // IBAN
		`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`,     // e-mail
		`\b4\d{3}[ -]?\d{4}[ -]?\d{4}[ -]?\d{4}\b`,           // Visa
		`\b5[1-5]\d{2}[ -]?\d{4}[ -]?\d{4}[ -]?\d{4}\b`,      // Mastercard
		`\b3[47]\d{2}[ -]?\d{6}[ -]?\d{5}\b`,                 // Amex
		`\b(?:\d[ -]?){13,16}\b`,                             // any card number
		`\b\+?1?[ .-]?\(?\d{3}\)?[ .-]?\d{3}[ .-]?\d{4}\b`,   // US phone
		`\+\d{1,3}[ .-]?\d{2,4}[ .-]?\d{3,4}[ .-]?\d{3,4}\b`, // international phone
		`\b0\d{4} ?\d{6}\b`,                                  // UK phone
		`\b\d{3}-\d{2}-\d{4}\b`,                              // US SSN
		`\b(?:\d{1,3}\.){3}\d{1,3}\b`,                        // IPv4
		`\bAKIA[0-9A-Z]{16}\b`,                               // AWS access key
		`\bsk-[A-Za-z0-9]{32,}\b`,                            // API secret key
		`\bghp_[A-Za-z0-9]{36}\b`,                            // GitHub token
		`(?i)\b(?:dob|date of birth)[: ]+\d{1,2}[./-]\d{1,2}[./-]\d{2,4}\b`,
		`(?i)\bpassport(?: no\.?| number)?[: ]*[A-Z0-9]{6,9}\b`,
		`\b\d{2}/\d{3}/\d{5}\b`, // German tax number
		`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`,
		`-----BEGIN (?:RSA |EC )?PRIVATE KEY-----`,
		`(?i)\bpassword\s*[:=]\s*\S+`,
	}
	prefixes := []string{"CUST", "EMP", "ACC", "INV", "ORD", "TKT", "CASE", "PRJ", "CLM", "POL",
		"PAT", "MRN", "CTR", "VND", "SUP", "LIC", "SRV", "REQ", "DOC", "BID"}
	for i, p := range prefixes {
		out = append(out, fmt.Sprintf(`\b%s-\d{6}\b`, p))
		if i < 10 {
			out = append(out, fmt.Sprintf(`(?i)\b%s-[A-Z]{3}-\d{4}\b`, p))
		}
	}
	return out[:50]
}

// policyWords is the vocabulary of the benchmark's prose and terms.
var policyWords = strings.Fields(`the a of to and in for on with as by at from please could you would we our
	review summarise draft email report customer account contract invoice payment meeting project deadline
	team budget quarter results data analysis model request answer question phone address street city
	schedule update status risk plan client partner supplier order delivery product service support issue
	ticket release feature test deploy server database backup policy legal finance sales marketing board
	Müller Zoë naïve café`)

// policyTerms returns list k of 100 made-up terms (code names, people and
// product names) of one to three words.
func policyTerms(k int) []string {
	r := rand.New(rand.NewPCG(uint64(k), 7))
	syll := strings.Fields("ka lo mi ra tu ne so vi da pe ko zu ha ri fa me no be la xi")
	word := func() string {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteString(syll[r.IntN(len(syll))])
		}
		return b.String()
	}
	out := make([]string, 100)
	for i := range out {
		switch i % 3 {
		case 0:
			out[i] = "Project " + strings.ToUpper(word()[:1]) + word()
		case 1:
			out[i] = word() + " " + word()
		default:
			out[i] = word() + "-" + fmt.Sprint(r.IntN(100))
		}
	}
	return out
}

// policyRequest returns a request of about 10 KB in four messages: prose
// with a few personal data items and a few listed terms.
func policyRequest() []string {
	r := rand.New(rand.NewPCG(42, 42))
	items := []string{"jane.doe@example.com", "+1 (555) 123-4567", "DE89370400440532013000",
		"4111 1111 1111 1111", "CUST-123456", "order 2024/118", "192.168.10.12", "TKT-000042",
		policyTerms(3)[4], policyTerms(17)[10], policyTerms(40)[33]}
	sizes := []int{1200, 4300, 3000, 1750}
	msgs := make([]string, len(sizes))
	for m, size := range sizes {
		var b strings.Builder
		for b.Len() < size {
			n := 6 + r.IntN(12)
			for i := range n {
				w := policyWords[r.IntN(len(policyWords))]
				if i == 0 {
					w = strings.ToUpper(w[:1]) + w[1:]
				}
				b.WriteString(w)
				b.WriteByte(' ')
				if r.IntN(40) == 0 {
					b.WriteString(items[r.IntN(len(items))])
					b.WriteByte(' ')
				}
			}
			b.WriteString(". ")
			if r.IntN(6) == 0 {
				b.WriteString("\n\n")
			}
		}
		msgs[m] = b.String()
	}
	return msgs
}

// policyInstructions returns the benchmark's 50 Regex and 50 StringMatch
// instructions, half of each case-insensitive.
func policyInstructions(regex, stringMatch bool) []spec.Instruction {
	var ins []spec.Instruction
	add := func(t spec.Trigger, i int) {
		ins = append(ins, spec.Instruction{ID: fmt.Sprintf("i%03d", len(ins)), Title: fmt.Sprintf("rule %d", i),
			AgentType: spec.AgentTypeDataProtection, Trigger: t, Action: spec.ActionBlock,
			Criticality: spec.CriticalityLow, AllowRedaction: i%2 == 0, UsedBy: []string{}})
	}
	if regex {
		for i, p := range policyRegexes() {
			add(spec.RegexTrigger(p, true), i)
		}
	}
	if stringMatch {
		for k := range 50 {
			add(spec.StringMatchTrigger(policyTerms(k), k%2 == 0), k)
		}
	}
	return ins
}

// BenchmarkPolicyEvaluate evaluates a 10 KB request of four messages against
// 100 instructions (50 Regex, 50 StringMatch lists of 100 terms) on one
// goroutine ("evals/s").
func BenchmarkPolicyEvaluate(b *testing.B) {
	set, err := policy.Compile(policyInstructions(true, true), policy.Options{})
	if err != nil {
		b.Fatal(err)
	}
	msgs := policyRequest()
	ctx := context.Background()
	res, err := set.Evaluate(ctx, msgs)
	if err != nil {
		b.Fatal(err)
	}
	if len(res.Reasons) < 10 {
		b.Fatalf("only %d instructions match the request", len(res.Reasons))
	}
	size := 0
	for _, m := range msgs {
		size += len(m)
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	for b.Loop() {
		if _, err := set.Evaluate(ctx, msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evals/s")
	b.ReportMetric(float64(len(res.Reasons)), "matching-instructions")
}

// naiveStringMatch is the StringMatch workload done term by term: each term
// searched with strings.Index over the (lower-cased) messages, with the same
// word-boundary checks. It returns the number of matches.
type naiveStringMatch struct {
	lists [][]string // terms, lower-cased for case-insensitive lists
	fold  []bool
}

func newNaiveStringMatch(ins []spec.Instruction) *naiveStringMatch {
	n := &naiveStringMatch{}
	for _, in := range ins {
		fold := !in.Trigger.CaseSensitive()
		var terms []string
		for _, v := range in.Trigger.Values {
			if fold {
				v = strings.Map(unicode.ToLower, v)
			}
			terms = append(terms, v)
		}
		n.lists = append(n.lists, terms)
		n.fold = append(n.fold, fold)
	}
	return n
}

func isWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

func (n *naiveStringMatch) run(msgs []string) int {
	folded := make([]string, len(msgs))
	for i, m := range msgs {
		folded[i] = strings.Map(unicode.ToLower, m)
	}
	count := 0
	for k, terms := range n.lists {
		for mi := range msgs {
			text := msgs[mi]
			if n.fold[k] {
				text = folded[mi]
			}
			for _, term := range terms {
				for at := 0; ; {
					i := strings.Index(text[at:], term)
					if i < 0 {
						break
					}
					start, end := at+i, at+i+len(term)
					before, _ := utf8.DecodeLastRuneInString(text[:start])
					after, _ := utf8.DecodeRuneInString(text[end:])
					if (start == 0 || !isWord(before)) && (end == len(text) || !isWord(after)) {
						count++
					}
					_, w := utf8.DecodeRuneInString(text[start:])
					at = start + w
				}
			}
		}
	}
	return count
}

var (
	naiveOnce sync.Once
	naiveRate float64 // evaluations per second of naiveStringMatch
)

// BenchmarkPolicyStringMatch evaluates the request against the 50
// StringMatch lists alone, compiled into a Set ("evals/s"), and reports how
// many times faster that is than the naive term-by-term loop ("x-naive").
func BenchmarkPolicyStringMatch(b *testing.B) {
	ins := policyInstructions(false, true)
	set, err := policy.Compile(ins, policy.Options{})
	if err != nil {
		b.Fatal(err)
	}
	msgs := policyRequest()
	ctx := context.Background()
	naive := newNaiveStringMatch(ins)
	res, err := set.Evaluate(ctx, msgs)
	if err != nil {
		b.Fatal(err)
	}
	spans := 0
	for _, r := range res.Reasons {
		spans += len(r.Matches)
	}
	if got := naive.run(msgs); got != spans || spans == 0 {
		b.Fatalf("naive loop finds %d matches, the set %d", got, spans)
	}
	naiveOnce.Do(func() { naiveRate = rate(1, func() { naive.run(msgs) }) })
	b.ResetTimer()
	for b.Loop() {
		if _, err := set.Evaluate(ctx, msgs); err != nil {
			b.Fatal(err)
		}
	}
	evals := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(evals, "evals/s")
	b.ReportMetric(naiveRate, "naive-evals/s")
	b.ReportMetric(evals/naiveRate, "x-naive")
}

// BenchmarkPolicyCompile compiles the 100 instructions of
// BenchmarkPolicyEvaluate, what a Cache does when an agent's instructions
// change ("ms/compile").
func BenchmarkPolicyCompile(b *testing.B) {
	ins := policyInstructions(true, true)
	for b.Loop() {
		if _, err := policy.Compile(ins, policy.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/compile")
}
