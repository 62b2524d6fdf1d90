package policy

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

// equalFold reports whether a and b are equal under simple case folding,
// walking the SimpleFold orbit (independently of fold.Rune).
func equalFold(a, b rune) bool {
	if a == b {
		return true
	}
	for f := unicode.SimpleFold(a); f != a; f = unicode.SimpleFold(f) {
		if f == b {
			return true
		}
	}
	return false
}

// refWord is the word-character rule, written out without fast paths.
func refWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// refStringMatch is the reference StringMatch: every rune position of text
// (decoded as a range loop does) compared with every term, rune by rune.
func refStringMatch(msg int, text string, values []string, caseSensitive bool) []spec.MatchSpan {
	runes := []rune(text)
	var out []spec.MatchSpan
	for _, v := range values {
		tr := []rune(v)
		if len(tr) == 0 {
			continue
		}
	positions:
		for i := 0; i+len(tr) <= len(runes); i++ {
			for k, r := range tr {
				if caseSensitive && runes[i+k] != r || !caseSensitive && !equalFold(runes[i+k], r) {
					continue positions
				}
			}
			if i > 0 && refWord(runes[i-1]) || i+len(tr) < len(runes) && refWord(runes[i+len(tr)]) {
				continue
			}
			out = append(out, spec.MatchSpan{MessageIndex: msg, Start: i, End: i + len(tr)})
		}
	}
	return sortSpans(out)
}

func sortSpans(s []spec.MatchSpan) []spec.MatchSpan {
	slices.SortFunc(s, func(a, b spec.MatchSpan) int {
		if a.MessageIndex != b.MessageIndex {
			return a.MessageIndex - b.MessageIndex
		}
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return a.End - b.End
	})
	return slices.Compact(s)
}

func reasonSpans(res Result) map[string][]spec.MatchSpan {
	out := map[string][]spec.MatchSpan{}
	for _, r := range res.Reasons {
		out[r.InstructionID] = r.Matches
	}
	return out
}

// FuzzStringMatch compares the Aho-Corasick StringMatch of a Set (three
// instructions sharing terms, each case sensitive or not) with the reference
// implementation, over two messages.
func FuzzStringMatch(f *testing.F) {
	seeds := []struct {
		text, terms string
		modes       uint8
	}{
		{"I love New York City.", "new york|york city|new york city", 0},
		{"cat concatenate cat_1 cat, (cat) cats", "cat|at|con", 7},
		{"STRAẞE Straße ΟΔΟΣ οδοσ \u212AELVIN ſs", "straße|οδος|kelvin|SS", 0},
		{"Güber über überall ÜBER 東京都 東京", "über|東京|ber", 2},
		{"cafe\u0301 cafe café", "cafe|café", 5},
		{"a a a aa", "a a|a|aa", 1},
		{"\xff\xfe x \ufffd y \xe2\x82", "\xff|\ufffd|x|y|\xe2", 0},
		{"C++ and @admin x@admin", "C++|@admin|+", 6},
		{"ǅemal Ǆemal ǆemal", "ǆemal|Ǆ", 0},
		{"I love New York City and new yorkers.", "new york|york city|new york city|ork", 0xf8},
		{"Güber über überall ÜBER 東京都 東京 ſs SS", "über|東京|ber|ss", 0x42},
		{"", "x", 0},
		{"only text", "", 0},
	}
	for _, s := range seeds {
		f.Add(s.text, s.terms, s.modes)
	}
	f.Fuzz(func(t *testing.T, text, termList string, modes uint8) {
		values := make([][]string, 3)
		for i, v := range strings.Split(termList, "|") {
			if utf8.RuneCountInString(v) > 300 {
				continue
			}
			values[i%3] = append(values[i%3], v)
			values[(i+1)%3] = append(values[(i+1)%3], strings.ToUpper(v))
		}
		ids := []string{"a", "b", "c"}
		ins := make([]spec.Instruction, 3)
		for k := range ins {
			ins[k] = spec.Instruction{ID: ids[k], Action: spec.ActionBlock,
				Trigger: spec.StringMatchTrigger(values[k], modes&(1<<k) == 0)}
		}
		messages := []string{text, strings.ToLower(text)}
		// The default automaton (all dense here), and one with a dense table
		// of a few states at most, the others sparse.
		for _, dense := range []int{0, int(modes >> 3)} {
			set, err := Compile(ins, Options{denseEntries: dense})
			require.NoError(t, err)
			res, err := set.Evaluate(context.Background(), messages)
			require.NoError(t, err)
			got := reasonSpans(res)
			for k := range ins {
				var want []spec.MatchSpan
				for mi, m := range messages {
					want = append(want, refStringMatch(mi, m, values[k], modes&(1<<k) == 0)...)
				}
				if len(want) == 0 {
					want = nil
				}
				require.Equal(t, want, got[ids[k]], "instruction %s (case sensitive %v, dense %d) terms %q",
					ids[k], modes&(1<<k) == 0, dense, values[k])
			}
		}
	})
}

// fuzzPatterns are the regexes FuzzRegexWindows and FuzzEvaluate start from.
var fuzzPatterns = []string{
	`\b[A-Z]{2}\d{2}[A-Z0-9]{11,30}\b`,
	`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`,
	`\b(?:\d[ -]?){13,16}\b`,
	`\b\+?\d{1,3}[ .-]?\(?\d{3}\)?[ .-]?\d{3}[ .-]?\d{4}\b`,
	`\bCUST-\d{6}\b`,
	`\B-\d+\B`,
	`(?i)\bproj[eé]ct-\w{2}\b`,
	`\d{3}-\d{2}-\d{4}`,
	`(?m)^id-\d+$`,
	`secret|password`,
	`x*`,
	`(a+)+$`,
	`[^ ]@[^ ]`,
	`é\pL{0,3}`,
	`(?s)k.{0,5}k`,
	`ſ\d`,
}

// FuzzRegexWindows checks that a Regex instruction, prefilters and windows
// included, finds exactly the non-empty matches of FindAllStringIndex over
// the whole message.
func FuzzRegexWindows(f *testing.F) {
	texts := []string{
		"Order 12345 of 2024: pay DE89370400440532013000; XDE89370400440532013000",
		"mail jane.doe@example.com, «bob@exämple.org» me@home.",
		"card 4111 1111 1111 1111 or 4111-1111-1111-1111x, call +1 (555) 123-4567",
		"cust-123456 CUST-123456 CUST-1234567 _CUST-123456",
		"a-12b -3 x-4- 5",
		"Project-ab PROJÉCT-xy project-abc",
		"id-1\nx id-2\nid-3",
		"aaaa aaab aaaa",
		"ſ1 S1 s1 k..k \u212A12345K kk",
		"\xff1234\xfe 12\xe2\x82 3-45-6789",
	}
	for i, p := range fuzzPatterns {
		f.Add(p, texts[i%len(texts)], i%3 == 0)
		f.Add(p, texts[(i+3)%len(texts)], false)
	}
	f.Fuzz(func(t *testing.T, pattern, text string, fold bool) {
		if len(pattern) > 200 {
			return
		}
		full := pattern
		if fold {
			full = "(?i)" + pattern
		}
		re, err := regexp.Compile(full)
		if err != nil || CheckPattern(pattern, !fold) != nil {
			return
		}
		var want []spec.MatchSpan
		for _, m := range re.FindAllStringIndex(text, -1) {
			if m[1] > m[0] {
				want = append(want, spec.MatchSpan{Start: utf8.RuneCountInString(text[:m[0]]), End: utf8.RuneCountInString(text[:m[1]])})
			}
		}
		for _, dense := range []int{0, 1} {
			set, err := Compile([]spec.Instruction{{ID: "r", Action: spec.ActionBlock,
				Trigger: spec.RegexTrigger(pattern, !fold)}}, Options{denseEntries: dense})
			require.NoError(t, err)
			res, err := set.Evaluate(context.Background(), []string{text})
			require.NoError(t, err)
			require.Equal(t, want, reasonSpans(res)["r"], "pattern %q", full)
		}
	})
}

// fuzzSets are the instruction sets FuzzEvaluate picks from.
func fuzzSets() [][]spec.Instruction {
	mk := func(id, action, crit string, redact bool, t spec.Trigger) spec.Instruction {
		return spec.Instruction{ID: id, Title: id, Action: action, Criticality: crit, AllowRedaction: redact, Trigger: t}
	}
	var sets [][]spec.Instruction
	for i, p := range fuzzPatterns {
		sets = append(sets, []spec.Instruction{
			mk("rx", spec.ActionBlock, spec.CriticalityHigh, i%2 == 0, spec.RegexTrigger(p, i%3 != 0)),
			mk("terms", spec.ActionBlock, spec.CriticalityLow, true, spec.StringMatchTrigger([]string{"é", "secret", "a a", "ß", "12"}, i%2 == 0)),
			mk("allow", spec.ActionAllow, spec.CriticalityLow, false, spec.RegexTrigger(`\((?:[^)]*)\)`, true)),
			mk("allow2", spec.ActionAllow, spec.CriticalityLow, false, spec.StringMatchTrigger([]string{"secret"}, false)),
			mk("sem", spec.ActionBlock, spec.CriticalityLow, false, spec.SemanticTrigger("share the secret password")),
		})
	}
	return sets
}

// FuzzEvaluate evaluates any text against sets built from the seed patterns
// and checks the invariants of a Result.
func FuzzEvaluate(f *testing.F) {
	for i, s := range []string{
		"the secret is 1234 5678 9012 3456 (secret)",
		"mail é@example.com ß a a a",
		"Grüße (CUST-123456) DE89370400440532013000\n\nid-12",
		"\xff\xfe12\xe2\x82 secret",
		"Share the secret password, please. Thanks!",
		"",
	} {
		f.Add(uint8(i*3), s, "aaaa(a)a ſ1 k..k")
	}
	sets := fuzzSets()
	// The sets compiled once, each with the default automaton and with a
	// dense table of a few entries (so that an execution costs no compile).
	compiled := map[[2]int]*Set{}
	for i, ins := range sets {
		for _, dense := range []int{0, 3} {
			set, err := Compile(ins, Options{RedactionMark: "█", denseEntries: dense})
			require.NoError(f, err)
			compiled[[2]int{i, dense}] = set
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, text, text2 string) {
		ins := sets[int(which)%len(sets)]
		set := compiled[[2]int{int(which) % len(sets), 3 * int(which>>7)}]
		messages := []string{text, text2}
		res, err := set.Evaluate(context.Background(), messages)
		require.NoError(t, err)
		byID := map[string]spec.Instruction{}
		for _, in := range ins {
			byID[in.ID] = in
		}
		order := map[string]int{}
		for i, in := range ins {
			order[in.ID] = i
		}
		// Spans within bounds, sorted, distinct; reasons in instruction order.
		var allow []spec.MatchSpan
		blocked, allRedact, high, redact := false, true, false, false
		for k, r := range res.Reasons {
			if k > 0 {
				require.Less(t, order[res.Reasons[k-1].InstructionID], order[r.InstructionID])
			}
			require.NotEmpty(t, r.Matches)
			require.Equal(t, sortSpans(slices.Clone(r.Matches)), r.Matches)
			for _, m := range r.Matches {
				require.True(t, m.MessageIndex >= 0 && m.MessageIndex < len(messages))
				require.True(t, 0 <= m.Start && m.Start < m.End && m.End <= utf8.RuneCountInString(messages[m.MessageIndex]), "%+v", m)
			}
			in := byID[r.InstructionID]
			if in.Action == spec.ActionAllow {
				allow = append(allow, r.Matches...)
				continue
			}
			blocked = true
			if in.AllowRedaction {
				redact = true
			} else {
				allRedact = false
				high = high || in.Criticality == spec.CriticalityHigh
			}
		}
		// No Block span within an Allow span.
		for _, r := range res.Reasons {
			if byID[r.InstructionID].Action != spec.ActionBlock {
				continue
			}
			for _, m := range r.Matches {
				for _, a := range allow {
					require.False(t, a.MessageIndex == m.MessageIndex && a.Start <= m.Start && m.End <= a.End,
						"block span %+v within allow span %+v", m, a)
				}
			}
		}
		want := OutcomeApproved
		switch {
		case !blocked:
		case allRedact:
			want = OutcomeRedacted
		case high:
			want = OutcomeRequiresIntervention
		default:
			want = OutcomeChangeRequested
		}
		require.Equal(t, want, res.Outcome)
		// Redaction: rebuilt from the spans in code points, byte for byte.
		if !redact {
			require.Nil(t, res.Redacted)
			return
		}
		require.Len(t, res.Redacted, len(messages))
		for mi, msg := range messages {
			var spans []spec.MatchSpan
			for _, r := range res.Reasons {
				if in := byID[r.InstructionID]; in.Action == spec.ActionBlock && in.AllowRedaction {
					for _, m := range r.Matches {
						if m.MessageIndex == mi {
							spans = append(spans, m)
						}
					}
				}
			}
			spans = sortSpans(spans)
			offsets := make([]int, 0, len(msg)+1) // byte offset of each code point
			for i := range msg {
				offsets = append(offsets, i)
			}
			offsets = append(offsets, len(msg))
			var b strings.Builder
			at := 0
			for i := 0; i < len(spans); {
				start, end := spans[i].Start, spans[i].End
				for i++; i < len(spans) && spans[i].Start <= end; i++ {
					end = max(end, spans[i].End)
				}
				b.WriteString(msg[offsets[at]:offsets[start]])
				b.WriteString("█")
				at = end
			}
			b.WriteString(msg[offsets[at]:])
			require.Equal(t, b.String(), res.Redacted[mi])
		}
	})
}
