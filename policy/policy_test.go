package policy_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/spec"
)

// Instruction builders.

func block(id string, t spec.Trigger) spec.Instruction {
	return spec.Instruction{ID: id, Title: "rule " + id, AgentType: spec.AgentTypeDataProtection, Trigger: t,
		Action: spec.ActionBlock, Criticality: spec.CriticalityLow, UsedBy: []string{}}
}

func allow(id string, t spec.Trigger) spec.Instruction {
	in := block(id, t)
	in.Action = spec.ActionAllow
	return in
}

func high(in spec.Instruction) spec.Instruction {
	in.Criticality = spec.CriticalityHigh
	return in
}

func redact(in spec.Instruction) spec.Instruction {
	in.AllowRedaction = true
	return in
}

func rx(pattern string) spec.Trigger { return spec.Trigger{Type: spec.TriggerRegex, Pattern: pattern} }

func rxi(pattern string) spec.Trigger { return spec.RegexTrigger(pattern, false) }

func terms(values ...string) spec.Trigger {
	return spec.Trigger{Type: spec.TriggerStringMatch, Values: values}
}

func termsi(values ...string) spec.Trigger { return spec.StringMatchTrigger(values, false) }

func sp(msg, start, end int) spec.MatchSpan {
	return spec.MatchSpan{MessageIndex: msg, Start: start, End: end}
}

// matches returns the spans of each matching instruction, by id.
func matches(res policy.Result) map[string][]spec.MatchSpan {
	out := map[string][]spec.MatchSpan{}
	for _, r := range res.Reasons {
		out[r.InstructionID] = r.Matches
	}
	return out
}

func evaluate(t *testing.T, ins []spec.Instruction, opts policy.Options, messages ...string) policy.Result {
	t.Helper()
	set, err := policy.Compile(ins, opts)
	require.NoError(t, err)
	res, err := set.Evaluate(context.Background(), messages)
	require.NoError(t, err)
	return res
}

// runeSlice returns s[start:end] in code points, to show what a span covers.
func runeSlice(s string, m spec.MatchSpan) string {
	return string([]rune(s)[m.Start:m.End])
}

func TestRegex(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		trigger  spec.Trigger
		messages []string
		want     []spec.MatchSpan
	}{
		{"case sensitive by default", rx(`secret`), []string{"Secret secret SECRET"}, []spec.MatchSpan{sp(0, 7, 13)}},
		{"case insensitive", rxi(`secret`), []string{"Secret secret SECRET"},
			[]spec.MatchSpan{sp(0, 0, 6), sp(0, 7, 13), sp(0, 14, 20)}},
		{"all non-overlapping matches", rx(`aa`), []string{"aaaaa"}, []spec.MatchSpan{sp(0, 0, 2), sp(0, 2, 4)}},
		{"empty matches ignored", rx(`x*`), []string{"abxxc"}, []spec.MatchSpan{sp(0, 2, 4)}},
		{"only empty matches", rx(`\b`), []string{"a b"}, nil},
		{"code points in multi-byte text", rx(`\d{4}`), []string{"Zürich 8001 — Größe 1234 €"},
			[]spec.MatchSpan{sp(0, 7, 11), sp(0, 20, 24)}},
		{"multiple messages", rx(`[A-Z]{3}-\d+`), []string{"no match", "ABC-1 and XYZ-22", "日本 QRS-333"},
			[]spec.MatchSpan{sp(1, 0, 5), sp(1, 10, 16), sp(2, 3, 10)}},
		{"case folding of (?i) covers the Kelvin sign", rxi(`kelvin`), []string{"\u212Aelvin KELVIN"},
			[]spec.MatchSpan{sp(0, 0, 6), sp(0, 7, 13)}},
		{"IBAN in prose with other digits", rx(`\b[A-Z]{2}\d{2}[A-Z0-9]{11,30}\b`),
			[]string{"Order 12345 of 2024: pay to DE89370400440532013000 by Friday; not XDE89370400440532013000 nor DE8937040044053201300012345678901234."},
			[]spec.MatchSpan{sp(0, 28, 50)}},
		{"email, unbounded", rx(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`),
			[]string{"Write to jane.doe+x@example.co.uk, or to «bob@example.org» (é@x.de, ünï@bé.com), or me@home."},
			[]spec.MatchSpan{sp(0, 9, 33), sp(0, 42, 57)}},
		{"word boundaries at window edges", rx(`\bab\d\b`), []string{"xab1 ab1 ab1x _ab1 ab1_ (ab1)"},
			[]spec.MatchSpan{sp(0, 5, 8), sp(0, 25, 28)}},
		{"anchors", rx(`^\d+|\d+$`), []string{"12 ab 34", "x 5"}, []spec.MatchSpan{sp(0, 0, 2), sp(0, 6, 8), sp(1, 2, 3)}},
		{"multi-line anchors", rx(`(?m)^id-\d+$`), []string{"id-1\nx id-2\nid-3"}, []spec.MatchSpan{sp(0, 0, 4), sp(0, 12, 16)}},
		{"custom id with literal prefix", rx(`\bCUST-\d{6}\b`), []string{"cust-123456 CUST-123456 CUST-1234567"},
			[]spec.MatchSpan{sp(0, 12, 23)}},
		{"custom id, case insensitive", rxi(`\bCUST-\d{6}\b`), []string{"cust-123456 CUST-123456 CUST-1234567"},
			[]spec.MatchSpan{sp(0, 0, 11), sp(0, 12, 23)}},
		{"no match", rx(`\d{3}-\d{2}-\d{4}`), []string{"nothing to see here", ""}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := evaluate(t, []spec.Instruction{block("r", tt.trigger)}, policy.Options{}, tt.messages...)
			require.Equal(t, tt.want, matches(res)["r"])
		})
	}
}

func TestStringMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		trigger  spec.Trigger
		messages []string
		want     []spec.MatchSpan
	}{
		{"case sensitive by default", terms("Project Falcon"), []string{"project falcon, Project Falcon, PROJECT FALCON"},
			[]spec.MatchSpan{sp(0, 16, 30)}},
		{"case insensitive", termsi("Project Falcon"), []string{"project falcon, Project Falcon, PROJECT FALCON"},
			[]spec.MatchSpan{sp(0, 0, 14), sp(0, 16, 30), sp(0, 32, 46)}},
		{"word boundaries", terms("cat"), []string{"cat concatenate cat_1 cat, (cat) cats 9cat cat"},
			[]spec.MatchSpan{sp(0, 0, 3), sp(0, 22, 25), sp(0, 28, 31), sp(0, 43, 46)}},
		{"unicode letters are word characters", terms("über"), []string{"Güber über überall ÜBER"},
			[]spec.MatchSpan{sp(0, 6, 10)}},
		{"unicode digits are word characters", terms("x"), []string{"٣x x"}, []spec.MatchSpan{sp(0, 3, 4)}},
		{"letters without spaces", terms("東京"), []string{"東京都 東京 tower (東京)"},
			[]spec.MatchSpan{sp(0, 4, 6), sp(0, 14, 16)}},
		{"combining marks are word characters", terms("cafe"), []string{"cafe\u0301 cafe"}, []spec.MatchSpan{sp(0, 6, 10)}},
		{"punctuation in terms", terms("C++", "@admin"), []string{"I code C++ daily, not C++x; ping @admin or x@admin"},
			[]spec.MatchSpan{sp(0, 7, 10), sp(0, 33, 39)}},
		{"folding: sharp s, sigma, Kelvin", termsi("straße", "οδος", "kelvin"),
			[]string{"STRAẞE Straße STRASSE ΟΔΟΣ οδοσ \u212AELVIN"},
			[]spec.MatchSpan{sp(0, 0, 6), sp(0, 7, 13), sp(0, 22, 26), sp(0, 27, 31), sp(0, 32, 38)}},
		{"folding keeps code point positions", termsi("ǅemal"), []string{"ÀÀ Ǆemal ǆemal"},
			[]spec.MatchSpan{sp(0, 3, 8), sp(0, 9, 14)}},
		{"overlapping terms", termsi("new york", "york city", "new york city"), []string{"I love New York City."},
			[]spec.MatchSpan{sp(0, 7, 15), sp(0, 7, 20), sp(0, 11, 20)}},
		{"overlapping occurrences of one term", terms("a a"), []string{"a a a"}, []spec.MatchSpan{sp(0, 0, 3), sp(0, 2, 5)}},
		{"duplicate and empty values", terms("x", "x", ""), []string{"x y x"}, []spec.MatchSpan{sp(0, 0, 1), sp(0, 4, 5)}},
		{"multiple messages", terms("falcon"), []string{"falcon", "", "the falcon flies", "falcons"},
			[]spec.MatchSpan{sp(0, 0, 6), sp(2, 4, 10)}},
		{"no values", terms(), []string{"anything"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := evaluate(t, []spec.Instruction{block("s", tt.trigger)}, policy.Options{}, tt.messages...)
			require.Equal(t, tt.want, matches(res)["s"])
		})
	}
}

func TestStringMatchSharedTerms(t *testing.T) {
	t.Parallel()
	ins := []spec.Instruction{
		block("a", termsi("falcon", "eagle")),
		block("b", terms("falcon")),
		block("c", termsi("FALCON")),
		block("d", rxi(`falcon`)),
	}
	res := evaluate(t, ins, policy.Options{}, "Falcon and falcon")
	require.Equal(t, map[string][]spec.MatchSpan{
		"a": {sp(0, 0, 6), sp(0, 11, 17)},
		"b": {sp(0, 11, 17)},
		"c": {sp(0, 0, 6), sp(0, 11, 17)},
		"d": {sp(0, 0, 6), sp(0, 11, 17)},
	}, matches(res))
	require.Len(t, res.Reasons, 4)
	require.Equal(t, []string{"a", "b", "c", "d"}, []string{res.Reasons[0].InstructionID, res.Reasons[1].InstructionID,
		res.Reasons[2].InstructionID, res.Reasons[3].InstructionID})
	require.Equal(t, "rule a", res.Reasons[0].Title)
	require.Equal(t, spec.ActionBlock, res.Reasons[0].Action)
	require.Equal(t, spec.CriticalityLow, res.Reasons[0].Criticality)
}

func TestOutcomes(t *testing.T) {
	t.Parallel()
	card := rx(`\b\d{4}-\d{4}-\d{4}-\d{4}\b`)
	word := terms("falcon")
	tests := []struct {
		name     string
		ins      []spec.Instruction
		text     string
		want     policy.Outcome
		redacted bool
	}{
		{"nothing matches", []spec.Instruction{block("b", card)}, "hello", policy.OutcomeApproved, false},
		{"only allow matches", []spec.Instruction{allow("a", word), block("b", card)}, "falcon", policy.OutcomeApproved, false},
		{"low block", []spec.Instruction{block("b", word)}, "falcon", policy.OutcomeChangeRequested, false},
		{"high block", []spec.Instruction{high(block("b", word))}, "falcon", policy.OutcomeRequiresIntervention, false},
		{"high and low", []spec.Instruction{block("l", word), high(block("h", card))}, "falcon 1234-5678-9012-3456",
			policy.OutcomeRequiresIntervention, false},
		{"redaction only", []spec.Instruction{redact(block("b", card))}, "pay 1234-5678-9012-3456", policy.OutcomeRedacted, true},
		// High escalates to a person even where redaction is allowed; the
		// redacted copy is the proposal offered to the person.
		{"high redaction only", []spec.Instruction{redact(high(block("b", card)))}, "pay 1234-5678-9012-3456",
			policy.OutcomeRequiresIntervention, true},
		{"high redaction and low block", []spec.Instruction{redact(high(block("r", card))), block("l", word)},
			"falcon 1234-5678-9012-3456", policy.OutcomeRequiresIntervention, true},
		{"low redaction and low block", []spec.Instruction{redact(block("r", card)), block("l", word)},
			"falcon 1234-5678-9012-3456", policy.OutcomeChangeRequested, true},
		{"low and high redaction", []spec.Instruction{redact(block("r", card)), redact(high(block("h", word)))},
			"falcon 1234-5678-9012-3456", policy.OutcomeRequiresIntervention, true},
		{"high redacting instruction does not match", []spec.Instruction{redact(high(block("h", card))), redact(block("r", word))},
			"falcon", policy.OutcomeRedacted, true},
		{"redaction and high block", []spec.Instruction{redact(block("r", card)), high(block("h", word))},
			"falcon 1234-5678-9012-3456", policy.OutcomeRequiresIntervention, true},
		{"redacting instruction does not match", []spec.Instruction{redact(block("r", card)), block("l", word)},
			"falcon", policy.OutcomeChangeRequested, false},
		{"allow with redaction is no redaction", []spec.Instruction{redact(allow("a", word))}, "falcon", policy.OutcomeApproved, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := evaluate(t, tt.ins, policy.Options{}, tt.text)
			require.Equal(t, tt.want, res.Outcome)
			require.Equal(t, tt.redacted, res.Redacted != nil)
			if tt.name == "nothing matches" {
				require.Nil(t, res.Reasons)
			}
		})
	}
}

func TestRedaction(t *testing.T) {
	t.Parallel()
	email := redact(block("email", rx(`[\pL.]+@[a-z.]+\.[a-z]{2,}`)))
	digits := redact(block("digits", rx(`\d{4}`)))
	name := redact(block("name", termsi("jürgen müller", "müller")))
	tests := []struct {
		name     string
		ins      []spec.Instruction
		opts     policy.Options
		messages []string
		want     []string
	}{
		{"multi-byte text kept byte for byte", []spec.Instruction{email},
			policy.Options{}, []string{"Grüße an jürgen@example.de — danke! 😀"}, []string{"Grüße an [REDACTED] — danke! 😀"}},
		{"messages without spans unchanged", []spec.Instruction{email}, policy.Options{},
			[]string{"système", "mail a@b.fr now", "", "no"}, []string{"système", "mail [REDACTED] now", "", "no"}},
		{"overlapping spans of two instructions merged", []spec.Instruction{name, redact(block("first", termsi("jürgen")))},
			policy.Options{}, []string{"Herr Jürgen Müller, bitte."}, []string{"Herr [REDACTED], bitte."}},
		{"adjacent spans merged", []spec.Instruction{digits}, policy.Options{},
			[]string{"code 12345678 or 1234 5678"}, []string{"code [REDACTED] or [REDACTED] [REDACTED]"}},
		{"custom mark", []spec.Instruction{digits}, policy.Options{RedactionMark: "███"},
			[]string{"pin 1234."}, []string{"pin ███."}},
		{"only redacting instructions' spans", []spec.Instruction{email, block("word", terms("pin"))}, policy.Options{},
			[]string{"pin x@y.zz"}, []string{"pin [REDACTED]"}},
		{"invalid UTF-8 kept", []spec.Instruction{digits}, policy.Options{},
			[]string{"\xff1234\xfe"}, []string{"\xff[REDACTED]\xfe"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := evaluate(t, tt.ins, tt.opts, tt.messages...)
			require.Equal(t, tt.want, res.Redacted)
		})
	}
	t.Run("spans in code points", func(t *testing.T) {
		t.Parallel()
		msg := "Grüße an jürgen@example.de — danke! 😀"
		res := evaluate(t, []spec.Instruction{email}, policy.Options{}, msg)
		require.Equal(t, []spec.MatchSpan{sp(0, 9, 26)}, matches(res)["email"])
		require.Equal(t, "jürgen@example.de", runeSlice(msg, matches(res)["email"][0]))
	})
}

func TestAllowExemptsBlock(t *testing.T) {
	t.Parallel()
	email := rx(`[a-z.]+@[a-z.]+\.[a-z]{2,}`)
	t.Run("within an allow match", func(t *testing.T) {
		t.Parallel()
		ins := []spec.Instruction{high(block("email", email)), allow("test", terms("test@example.com"))}
		res := evaluate(t, ins, policy.Options{}, "write to test@example.com or to jane@corp.io")
		require.Equal(t, policy.OutcomeRequiresIntervention, res.Outcome)
		require.Equal(t, map[string][]spec.MatchSpan{
			"email": {sp(0, 32, 44)},
			"test":  {sp(0, 9, 25)},
		}, matches(res))
	})
	t.Run("every match exempted", func(t *testing.T) {
		t.Parallel()
		ins := []spec.Instruction{high(block("email", email)), allow("test", termsi("test@example.com"))}
		res := evaluate(t, ins, policy.Options{}, "write to test@example.com", "or TEST@example.com")
		require.Equal(t, policy.OutcomeApproved, res.Outcome)
		require.Equal(t, []string{"test"}, []string{res.Reasons[0].InstructionID})
		require.Len(t, res.Reasons, 1)
		require.Nil(t, res.Redacted)
	})
	t.Run("partial overlap is not exempt", func(t *testing.T) {
		t.Parallel()
		ins := []spec.Instruction{block("email", email), allow("domain", terms("example.com"))}
		res := evaluate(t, ins, policy.Options{}, "test@example.com")
		require.Equal(t, policy.OutcomeChangeRequested, res.Outcome)
	})
	t.Run("other message is not exempt", func(t *testing.T) {
		t.Parallel()
		ins := []spec.Instruction{block("word", terms("falcon")), allow("ctx", rx(`project falcon`))}
		res := evaluate(t, ins, policy.Options{}, "project falcon", "falcon")
		require.Equal(t, []spec.MatchSpan{sp(1, 0, 6)}, matches(res)["word"])
	})
	t.Run("exempted redaction", func(t *testing.T) {
		t.Parallel()
		ins := []spec.Instruction{redact(block("digits", rx(`\d+`))), allow("year", rx(`\b(19|20)\d\d\b`))}
		res := evaluate(t, ins, policy.Options{}, "in 2024 call 5551234")
		require.Equal(t, policy.OutcomeRedacted, res.Outcome)
		require.Equal(t, []string{"in 2024 call [REDACTED]"}, res.Redacted)
		res = evaluate(t, ins, policy.Options{}, "in 2024")
		require.Equal(t, policy.OutcomeApproved, res.Outcome)
		require.Nil(t, res.Redacted)
	})
	t.Run("exempted lists what each allow exempted", func(t *testing.T) {
		t.Parallel()
		ins := []spec.Instruction{
			block("email", email), high(block("corp", terms("corp.io"))),
			allow("test", terms("test@example.com")), allow("corp-ok", rx(`jane@corp\.io`)), allow("idle", terms("nothing"))}
		res := evaluate(t, ins, policy.Options{}, "write to test@example.com or jane@corp.io, nothing else")
		require.Equal(t, policy.OutcomeApproved, res.Outcome)
		exempted := map[string][]string{}
		for _, r := range res.Reasons {
			exempted[r.InstructionID] = r.Exempted
		}
		require.Equal(t, map[string][]string{"test": {"email"}, "corp-ok": {"email", "corp"}, "idle": nil}, exempted)
		require.False(t, res.HighExemption, "no Allow instruction is High")
	})
	t.Run("a high allow that exempts is a person-level exemption", func(t *testing.T) {
		t.Parallel()
		ins := []spec.Instruction{high(block("falcon", termsi("falcon"))), high(allow("legal", rx(`(?i)legal review of project falcon`)))}
		res := evaluate(t, ins, policy.Options{}, "Legal review of Project Falcon is due")
		require.Equal(t, policy.OutcomeApproved, res.Outcome)
		require.True(t, res.HighExemption)
		require.Equal(t, []string{"falcon"}, res.Reasons[0].Exempted)
		// Matching without exempting anything is no exemption.
		res = evaluate(t, ins, policy.Options{}, "Legal review of project falcon. Falcon ships.")
		require.Equal(t, policy.OutcomeRequiresIntervention, res.Outcome, "the second falcon is not exempted")
		require.True(t, res.HighExemption, "the first one was")
		res = evaluate(t, []spec.Instruction{high(allow("legal", terms("legal")))}, policy.Options{}, "legal")
		require.False(t, res.HighExemption)
		require.Nil(t, res.Reasons[0].Exempted)
	})
	t.Run("semantic allow", func(t *testing.T) {
		t.Parallel()
		ins := []spec.Instruction{block("card", rx(`\b\d{4} \d{4} \d{4} \d{4}\b`)),
			allow("example", spec.SemanticTrigger("this is a test card number from the documentation"))}
		res := evaluate(t, ins, policy.Options{}, "This is a test card number from the documentation: 4111 1111 1111 1111. Mine is 5500 0000 0000 0004.")
		require.Equal(t, []spec.MatchSpan{sp(0, 80, 99)}, matches(res)["card"])
		text := "This is a test card number from the documentation: 4111 1111 1111 1111."
		require.Equal(t, []spec.MatchSpan{semSp(0, 0, 71, text, policy.LexicalMatcher{}.Similarity(text, ins[1].Trigger.Text))},
			matches(res)["example"])
	})
}

// fakeMatcher is a SemanticMatcher answering from a function.
type fakeMatcher struct {
	fn    func(segments, queries []string) ([][]int, error)
	calls int
}

func (f *fakeMatcher) Match(_ context.Context, segments, queries []string) ([][]int, error) {
	f.calls++
	return f.fn(segments, queries)
}

// semSp is a Semantic match with its text and score.
func semSp(msg, start, end int, text string, similarity float64) spec.MatchSpan {
	return spec.MatchSpan{MessageIndex: msg, Start: start, End: end, Text: text, Similarity: similarity}
}

// fakeScorer is a SemanticScorer answering fixed scores.
type fakeScorer struct {
	scores    [][]float64
	threshold float64
}

func (f *fakeScorer) Match(context.Context, []string, []string) ([][]int, error) {
	panic("Evaluate must ask a SemanticScorer for scores")
}

func (f *fakeScorer) Scores(context.Context, []string, []string) ([][]float64, error) {
	return f.scores, nil
}

func (f *fakeScorer) MatchThreshold() float64 { return f.threshold }

func TestSemantic(t *testing.T) {
	t.Parallel()
	ins := []spec.Instruction{
		high(block("db", spec.SemanticTrigger("share the customer database with a third party"))),
		block("salary", spec.SemanticTrigger("the salary of an employee")),
	}
	builtin := []struct {
		name    string
		matcher policy.SemanticScorer
		opts    policy.Options
	}{
		{"lexical matcher (default)", policy.LexicalMatcher{}, policy.Options{}},
		{"n-gram matcher", policy.NGramMatcher{}, policy.Options{Semantic: policy.NGramMatcher{}}},
	}
	for _, tt := range builtin {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg := "Hello! Could you write a haiku about autumn? Then please share our customer database with a third-party vendor.\nThanks."
			res := evaluate(t, ins, tt.opts, "Summarise the quarterly results.", msg)
			require.Equal(t, policy.OutcomeRequiresIntervention, res.Outcome)
			text := "Then please share our customer database with a third-party vendor."
			score := tt.matcher.(interface{ Similarity(a, b string) float64 }).Similarity(text, ins[0].Trigger.Text)
			require.GreaterOrEqual(t, score, tt.matcher.MatchThreshold())
			require.Equal(t, map[string][]spec.MatchSpan{"db": {semSp(1, 45, 111, text, score)}}, matches(res))
			require.Equal(t, text, runeSlice(msg, sp(1, 45, 111)))
		})
		t.Run(tt.name+", unrelated text", func(t *testing.T) {
			t.Parallel()
			res := evaluate(t, ins, tt.opts, "Write a haiku about the sea. Fix the bug in this date parser!", "The weather in Paris is nice.")
			require.Equal(t, policy.OutcomeApproved, res.Outcome)
			require.Nil(t, res.Reasons)
		})
	}
	t.Run("lexical matcher, synonyms and other languages", func(t *testing.T) {
		t.Parallel()
		acq := []spec.Instruction{block("acq", spec.SemanticTrigger("unannounced acquisitions of other companies"))}
		for _, msg := range []string{
			"We are secretly buying two companies next quarter.",
			"Wir planen die geheime Übernahme eines Unternehmens.",
			"La adquisición secreta de la empresa sigue en marcha.",
		} {
			res := evaluate(t, acq, policy.Options{}, msg)
			require.Equal(t, policy.OutcomeChangeRequested, res.Outcome, msg)
			require.Equal(t, msg, res.Reasons[0].Matches[0].Text)
			require.Positive(t, res.Reasons[0].Matches[0].Similarity)
		}
		res := evaluate(t, acq, policy.Options{}, "The cafeteria serves soup on Tuesdays.")
		require.Equal(t, policy.OutcomeApproved, res.Outcome)
	})
	t.Run("scorer answering out of shape", func(t *testing.T) {
		t.Parallel()
		for _, answer := range [][][]float64{{{1}}, {{1, 1}, {1}}, {{math.NaN()}, {0}}} {
			m := &fakeScorer{scores: answer}
			set, err := policy.Compile(ins, policy.Options{Semantic: m})
			require.NoError(t, err)
			_, err = set.Evaluate(context.Background(), []string{"One sentence."})
			require.Error(t, err)
		}
	})
	t.Run("scorer threshold and similarity", func(t *testing.T) {
		t.Parallel()
		m := &fakeScorer{scores: [][]float64{{0.2, 0.9}, {0.5, 0.49}}, threshold: 0.5}
		res := evaluate(t, ins, policy.Options{Semantic: m}, "First one. Second one.")
		require.Equal(t, map[string][]spec.MatchSpan{
			"db":     {semSp(0, 11, 22, "Second one.", 0.9)},
			"salary": {semSp(0, 0, 10, "First one.", 0.5)},
		}, matches(res))
	})
	t.Run("segments and queries given to the matcher", func(t *testing.T) {
		t.Parallel()
		var gotSegs, gotQueries []string
		m := &fakeMatcher{fn: func(segs, queries []string) ([][]int, error) {
			gotSegs, gotQueries = segs, queries
			return [][]int{{1}, {0, 1, 1}}, nil
		}}
		res := evaluate(t, ins, policy.Options{Semantic: m}, "  Première phrase.  Deuxième? ", "...", "Dernière\nligne")
		require.Equal(t, []string{"Première phrase.", "Deuxième?", "Dernière", "ligne"}, gotSegs)
		require.Equal(t, []string{"share the customer database with a third party", "the salary of an employee"}, gotQueries)
		// Without scores, the matches carry their text and no similarity.
		require.Equal(t, map[string][]spec.MatchSpan{
			"db":     {semSp(0, 20, 29, "Deuxième?", 0)},
			"salary": {semSp(0, 2, 18, "Première phrase.", 0), semSp(0, 20, 29, "Deuxième?", 0)},
		}, matches(res))
	})
	t.Run("matcher not called without semantic instructions or text", func(t *testing.T) {
		t.Parallel()
		m := &fakeMatcher{fn: func(segs, queries []string) ([][]int, error) { return nil, errors.New("down") }}
		evaluate(t, []spec.Instruction{block("w", terms("x"))}, policy.Options{Semantic: m}, "some text")
		evaluate(t, ins, policy.Options{Semantic: m}, " ... ", "")
		evaluate(t, []spec.Instruction{block("blank", spec.SemanticTrigger("  "))}, policy.Options{Semantic: m}, "text")
		require.Zero(t, m.calls)
	})
	t.Run("failing matcher", func(t *testing.T) {
		t.Parallel()
		down := errors.New("embeddings service down")
		m := &fakeMatcher{fn: func(segs, queries []string) ([][]int, error) { return nil, down }}
		set, err := policy.Compile(ins, policy.Options{Semantic: m})
		require.NoError(t, err)
		_, err = set.Evaluate(context.Background(), []string{"Some text."})
		require.ErrorIs(t, err, down)
	})
	t.Run("matcher answering out of range", func(t *testing.T) {
		t.Parallel()
		for _, answer := range [][][]int{{{0}}, {{0}, {1}}, {{-1}, {}}} {
			m := &fakeMatcher{fn: func(segs, queries []string) ([][]int, error) { return answer, nil }}
			set, err := policy.Compile(ins, policy.Options{Semantic: m})
			require.NoError(t, err)
			_, err = set.Evaluate(context.Background(), []string{"One sentence."})
			require.Error(t, err)
		}
	})
	t.Run("long sentences are cut into windows", func(t *testing.T) {
		t.Parallel()
		var gotSegs []string
		m := &fakeMatcher{fn: func(segs, queries []string) ([][]int, error) {
			gotSegs = segs
			return make([][]int, len(queries)), nil
		}}
		long := strings.Repeat("wörd ", 200) // 1,000 runes, no full stop
		evaluate(t, ins, policy.Options{Semantic: m}, long)
		require.Len(t, gotSegs, 3)
		total := 0
		for _, s := range gotSegs {
			n := len([]rune(s))
			require.LessOrEqual(t, n, 400)
			require.Equal(t, strings.TrimSpace(s), s)
			total += n
		}
		require.Equal(t, 999-2, total) // 1,000 runes less the final space and the two cut spaces
	})
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   spec.Instruction
	}{
		{"bad regex", block("bad", rx(`(unclosed`))},
		{"unknown trigger", block("bad", spec.Trigger{Type: "Magic"})},
		{"unknown action", spec.Instruction{ID: "bad", Action: "Shrug", Trigger: terms("x")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := policy.Compile([]spec.Instruction{block("ok", terms("x")), tt.in}, policy.Options{})
			var ce *policy.CompileError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "bad", ce.InstructionID)
			require.Contains(t, err.Error(), "bad")
		})
	}
}

func TestEvaluateEmpty(t *testing.T) {
	t.Parallel()
	res := evaluate(t, nil, policy.Options{}, "anything")
	require.Equal(t, policy.Result{Outcome: policy.OutcomeApproved}, res)
	res = evaluate(t, []spec.Instruction{block("w", terms("x"))}, policy.Options{})
	require.Equal(t, policy.Result{Outcome: policy.OutcomeApproved}, res)
}

func TestEvaluateCanceled(t *testing.T) {
	t.Parallel()
	set, err := policy.Compile([]spec.Instruction{block("w", terms("x"))}, policy.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = set.Evaluate(ctx, []string{"x"})
	require.ErrorIs(t, err, context.Canceled)
}

// TestLinearTime evaluates patterns that take exponential time in a
// backtracking engine on a long input: with RE2 they complete (a
// backtracking engine would not finish within the test run).
func TestLinearTime(t *testing.T) {
	t.Parallel()
	input := strings.Repeat("a", 100_000) + "b"
	ins := []spec.Instruction{
		block("nested", rx(`(a+)+$`)),
		block("alternation", rx(`(a|aa)+$`)),
		block("backref-like", rxi(`^(a|a?)+$`)),
		block("terms", terms(strings.Repeat("a", 200), "a")),
	}
	// No evaluation budget: what would stop a super-linear scan here is go
	// test's timeout. Under the race detector on two busy cores, 300 KB
	// against these patterns took longer than the default budget of 2 s
	// (linear, but ten times slower), which is the budget's own test's
	// concern (TestEvaluateStopsAtBudget), not this one's.
	res := evaluate(t, ins, policy.Options{Budget: -1}, input, input+input)
	require.Equal(t, policy.OutcomeApproved, res.Outcome)
	require.Nil(t, res.Reasons)
}

func TestConcurrentEvaluate(t *testing.T) {
	t.Parallel()
	set, err := policy.Compile([]spec.Instruction{redact(block("d", rx(`\d+`))), block("w", termsi("falcon"))}, policy.Options{})
	require.NoError(t, err)
	done := make(chan policy.Result)
	for i := range 8 {
		go func() {
			var res policy.Result
			for range 50 {
				res, _ = set.Evaluate(context.Background(), []string{strings.Repeat("x", i) + " Falcon 42"})
			}
			done <- res
		}()
	}
	for range 8 {
		res := <-done
		require.Equal(t, policy.OutcomeChangeRequested, res.Outcome)
		require.Len(t, res.Reasons, 2)
	}
}
