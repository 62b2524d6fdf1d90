package policy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aiusage/kit/policy/internal/ahocorasick"
	"github.com/aiusage/kit/spec"
)

// Outcome is the result of evaluating a request against a [Set].
type Outcome string

// Outcomes of [Set.Evaluate].
const (
	// OutcomeApproved: no Block instruction matched.
	OutcomeApproved Outcome = "approved"
	// OutcomeRedacted: only Low Block instructions with allowRedaction
	// matched; the request is approved with a redacted copy
	// ([Result.Redacted]).
	OutcomeRedacted Outcome = "redacted"
	// OutcomeChangeRequested: a Low Block instruction without redaction
	// matched, and no High one.
	OutcomeChangeRequested Outcome = "change_requested"
	// OutcomeRequiresIntervention: a High Block instruction matched, with
	// or without allowRedaction: High escalates to a person. When a Block
	// instruction that allows redaction matched too, [Result.Redacted] is
	// the redacted copy to offer the person as a proposal.
	OutcomeRequiresIntervention Outcome = "requires_intervention"
)

// DefaultRedactionMark is the default of [Options.RedactionMark].
const DefaultRedactionMark = "[REDACTED]"

// Options configure [Compile] and [NewCache].
type Options struct {
	// Semantic evaluates Semantic instructions. Default: LexicalMatcher{},
	// the built-in matcher (no network).
	Semantic SemanticMatcher
	// RedactionMark replaces each redacted span. Default: DefaultRedactionMark
	// ("[REDACTED]").
	RedactionMark string
	// Budget bounds the time of one [Set.Evaluate]: the literal scan, the
	// Regex patterns and the built-in semantic matchers ([LexicalMatcher],
	// [NGramMatcher]) stop when it runs out, and Evaluate fails with a
	// [*BudgetError]. Another SemanticMatcher (an embeddings API) is not
	// counted: it has its own timeout, and its failure is an outage to retry.
	// Default: DefaultBudget (2 s); negative: no budget.
	Budget time.Duration
	// MaxMatches bounds the matches one [Set.Evaluate] records, all
	// instructions together; an evaluation that finds more fails with a
	// [*BudgetError] (Matches set). Default: DefaultMaxMatches; negative: no
	// bound.
	MaxMatches int

	// denseEntries overrides ahocorasick.DefaultDenseEntries (tests).
	denseEntries int
}

func (o Options) withDefaults() Options {
	if o.Semantic == nil {
		o.Semantic = LexicalMatcher{}
	}
	if o.RedactionMark == "" {
		o.RedactionMark = DefaultRedactionMark
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	if o.MaxMatches == 0 {
		o.MaxMatches = DefaultMaxMatches
	}
	if o.MaxMatches < 0 {
		o.MaxMatches = math.MaxInt
	}
	return o
}

// CompileError reports an instruction that [Compile] cannot compile: a Regex
// pattern that is not valid RE2 syntax, an unknown trigger type or action.
type CompileError struct {
	InstructionID string // the instruction's id
	Title         string // the instruction's title
	Err           error  // what is wrong, for a pattern the error of regexp.Compile
}

// Error names the instruction and the problem.
func (e *CompileError) Error() string {
	return fmt.Sprintf("policy: instruction %s (%q): %v", e.InstructionID, e.Title, e.Err)
}

// Unwrap returns the underlying error.
func (e *CompileError) Unwrap() error { return e.Err }

// Set is a compiled set of instructions, typically those assigned to one
// agent. It is immutable and safe for concurrent use. Its size grows with the
// StringMatch terms: about 20 bytes per byte of the terms, plus at most
// 1 MiB of transition tables.
type Set struct {
	instrs   []instr
	regexes  []*regexInstr
	folded   *ahocorasick.Automaton // case-insensitive StringMatch terms and the regexes' required literals
	exact    *ahocorasick.Automaton // case-sensitive StringMatch terms
	fpats    []patInfo              // per pattern of folded
	epats    []patInfo              // per pattern of exact
	semantic []int                  // instructions with a Semantic trigger
	queries  []string               // their texts
	sens     []string               // their sensitivities ("" or spec.SensitivityHigh)
	matcher  SemanticMatcher
	mark     string
	budget   time.Duration
	maxMatch int       // Options.MaxMatches
	refused  []refusal // Regex instructions over the limits of CheckPattern, not compiled
	ringLen  int
	pool     sync.Pool // *evalState
}

// instr is a compiled instruction's identity and action.
type instr struct {
	id, title, action, criticality string
	block, high, redact            bool
}

// refusal is a Regex instruction whose pattern is over the limits.
type refusal struct {
	inst int
	err  error
}

// patInfo tells what a pattern of an automaton stands for.
type patInfo struct {
	terms []int32 // instructions of which it is a StringMatch term
	lits  []int32 // regexes (index in Set.regexes) of which it is a required literal
}

// Compile compiles instructions, typically those assigned to one agent, in
// this order (the order of [Result.Reasons]). An instruction whose pattern does
// not compile, or whose trigger type or action is unknown, is a
// [*CompileError] naming it. Criticality High is high, anything else low. A
// StringMatch with no values, a Regex that matches only empty strings and a
// Semantic trigger with blank text never match. A valid pattern over the
// limits of [CheckPattern] (stored before they applied) is not compiled:
// every evaluation of the set then fails with a [*BudgetError] naming it.
func Compile(instructions []spec.Instruction, opts Options) (*Set, error) {
	opts = opts.withDefaults()
	s := &Set{matcher: opts.Semantic, mark: opts.RedactionMark, budget: opts.Budget, maxMatch: opts.MaxMatches, instrs: make([]instr, len(instructions))}
	folded, exact := ahocorasick.NewBuilder(true), ahocorasick.NewBuilder(false)
	addPattern := func(b *ahocorasick.Builder, infos *[]patInfo, p string) *patInfo {
		id := b.Add(p)
		if id < 0 {
			return nil
		}
		if int(id) == len(*infos) {
			*infos = append(*infos, patInfo{})
		}
		return &(*infos)[id]
	}
	for i, in := range instructions {
		fail := func(err error) (*Set, error) {
			return nil, &CompileError{InstructionID: in.ID, Title: in.Title, Err: err}
		}
		c := instr{id: in.ID, title: in.Title, action: in.Action, criticality: in.Criticality,
			high: in.Criticality == spec.CriticalityHigh}
		switch in.Action {
		case spec.ActionAllow:
		case spec.ActionBlock:
			c.block = true
			c.redact = in.AllowRedaction
		default:
			return fail(fmt.Errorf("unknown action %q", in.Action))
		}
		s.instrs[i] = c
		switch t := in.Trigger; t.Type {
		case spec.TriggerRegex:
			var pe *PatternError
			if err := checkPatternCost(t.Pattern, t.CaseSensitive()); errors.As(err, &pe) && !pe.Syntax {
				// Stored before the limits applied: never run, so that no
				// evaluation spends what it would cost.
				s.refused = append(s.refused, refusal{i, err})
				continue
			}
			ri, err := compileRegex(t.Pattern, t.CaseSensitive())
			if err != nil {
				return fail(err)
			}
			ri.inst = i
			r := int32(len(s.regexes))
			s.regexes = append(s.regexes, ri)
			for _, l := range ri.filter.Literals {
				if p := addPattern(folded, &s.fpats, l); p != nil {
					p.lits = append(p.lits, r)
				}
			}
		case spec.TriggerStringMatch:
			b, infos := exact, &s.epats
			if !t.CaseSensitive() {
				b, infos = folded, &s.fpats
			}
			for _, v := range t.Values {
				if p := addPattern(b, infos, v); p != nil && (len(p.terms) == 0 || p.terms[len(p.terms)-1] != int32(i)) {
					p.terms = append(p.terms, int32(i))
				}
			}
		case spec.TriggerSemantic:
			if strings.TrimSpace(t.Text) != "" {
				s.semantic = append(s.semantic, i)
				s.queries = append(s.queries, t.Text)
				sens := ""
				if t.HighSensitivity() {
					sens = SensitivityHigh
				}
				s.sens = append(s.sens, sens)
			}
		default:
			return fail(fmt.Errorf("unknown trigger type %q", t.Type))
		}
	}
	s.folded, s.exact = folded.Build(opts.denseEntries), exact.Build(opts.denseEntries)
	for _, a := range []*ahocorasick.Automaton{s.folded, s.exact} {
		if a != nil {
			s.ringLen = max(s.ringLen, a.RingLen())
		}
	}
	return s, nil
}

// Result is the outcome of [Set.Evaluate].
type Result struct {
	// Outcome is the decision.
	Outcome Outcome
	// Reasons holds every instruction that matched (Allow ones too), in
	// instruction order, each with its spans sorted by message index, start
	// and end. Nil when nothing matched.
	Reasons []spec.ReviewReason
	// Redacted is set when a matching Block instruction has allowRedaction
	// (whatever the Outcome): the messages, in order, with every span of those
	// instructions replaced by the redaction mark, overlapping and adjacent
	// spans merged into one mark, and every other byte unchanged. Nil
	// otherwise.
	Redacted []string
	// HighExemption is true when an Allow instruction of High criticality
	// exempted at least one match of a Block instruction: a person-level
	// exemption applied. Its reason's Exempted names what it exempted.
	HighExemption bool
}

// span is a match in bytes of message msg.
type span struct {
	msg, start, end int
}

func compareSpans(a, b span) int {
	if c := cmp.Compare(a.msg, b.msg); c != 0 {
		return c
	}
	if c := cmp.Compare(a.start, b.start); c != 0 {
		return c
	}
	return cmp.Compare(a.end, b.end)
}

// evalState is the scratch space of one evaluation.
type evalState struct {
	ring    []int32
	hits    [][]span     // per instruction
	total   int          // matches in hits, all instructions
	last    int          // the instruction of the last match added
	occ     [][][2]int32 // per regex: required literal occurrences in the current message
	windows [][2]int
	// similarity holds the scores of the Semantic matches, when the matcher
	// is a SemanticScorer or a JudgingMatcher, and the judge's quote and
	// verdict.
	similarity map[semanticHit]semanticInfo
}

func (s *Set) getState() *evalState {
	if st, ok := s.pool.Get().(*evalState); ok {
		return st
	}
	return &evalState{
		ring: make([]int32, s.ringLen),
		hits: make([][]span, len(s.instrs)),
		occ:  make([][][2]int32, len(s.regexes)),
	}
}

func (s *Set) putState(st *evalState) {
	for i := range st.hits {
		st.hits[i] = st.hits[i][:0]
	}
	st.total = 0
	clear(st.similarity)
	s.pool.Put(st)
}

// add records a match of instruction in.
func (st *evalState) add(in int, sp span) {
	st.hits[in] = append(st.hits[in], sp)
	st.total++
	st.last = in
}

// DefaultMaxMatches is the default of [Options.MaxMatches]: the matches one
// evaluation records, all instructions together. Each is kept until the
// result is built, and a request of 1 MiB can hold a million matches of one
// short pattern. An evaluation that finds more stops with a [*BudgetError]
// (Matches set), as one over its time budget does: its result would be too
// large to record or to review.
const DefaultMaxMatches = 10_000

// ErrMessageTooLong is returned by [Set.Evaluate] for a message of 2 GiB or
// more.
var ErrMessageTooLong = errors.New("policy: message too long")

// Evaluate evaluates messages, the content of each message of a request in
// order, against the set:
//
//   - Regex: every non-overlapping, non-empty match of the pattern in each
//     message (Go RE2 syntax, (?i) when isCaseSensitive is false).
//   - StringMatch: every occurrence of every term (occurrences of different
//     terms may overlap) not preceded or followed by a word character (a
//     letter, a decimal digit, an underscore or a combining mark). When
//     isCaseSensitive is false, runes compare by simple case folding (the
//     [unicode.SimpleFold] orbit, as regexp's (?i)), so positions map rune
//     for rune.
//   - Semantic: each message is cut into sentences (long sentences into
//     windows of at most 400 runes), and the SemanticMatcher is asked which
//     are similar to the instructions' texts; a similar sentence is a match
//     spanning it, with the sentence as its Text and, when the matcher is a
//     [SemanticScorer], its score as its Similarity (at the scorer's
//     RecallThreshold for an instruction of high sensitivity when it is a
//     [SensitiveScorer], else at its MatchThreshold). When the matcher is a
//     [JudgingMatcher], each [Judgement] is a match with its Score as
//     Similarity, its Quote and its Verdict. The matcher is not called when
//     no instruction is Semantic or the messages hold no letter or digit.
//
// A match of a Block instruction that lies entirely within a match of an
// Allow instruction in the same message is dropped (the Allow instruction's
// reason lists the Block instruction in Exempted); an instruction with no
// match left did not match. The outcome is then approved when no Block
// instruction matched, requires_intervention when one that matched is High
// (High escalates to a person, whether or not it allows redaction),
// redacted when all those that matched allow redaction, and
// change_requested otherwise.
//
// Spans are half-open, in Unicode code points of the message (an invalid
// UTF-8 byte counts as one). Evaluate fails when ctx is done, when a message
// is 2 GiB or longer, or when the SemanticMatcher fails or answers out of
// range; the error then means the evaluation could not run. It fails with a
// [*BudgetError] (errors.Is ErrBudgetExceeded) when the evaluation takes
// longer than [Options.Budget] (it is stopped: between messages, between
// patterns, every 256 runes within a long pattern search, and every 64
// sentences of a built-in semantic matcher), or when the set holds a pattern
// over the limits of [CheckPattern]: a result that evaluating again would
// not change.
func (s *Set) Evaluate(ctx context.Context, messages []string) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	for _, m := range messages {
		if len(m) >= math.MaxInt32 {
			return Result{}, ErrMessageTooLong
		}
	}
	if len(s.refused) > 0 {
		r := s.refused[0]
		return Result{}, &BudgetError{InstructionID: s.instrs[r.inst].id, Title: s.instrs[r.inst].title, Pattern: r.err}
	}
	// bctx ends when the budget, less spent (the time not counted), runs
	// out.
	bctx, spent := ctx, time.Duration(0)
	cancel := context.CancelFunc(func() {})
	defer func() { cancel() }()
	startBudget := func() {
		if s.budget > 0 {
			bctx, cancel = context.WithTimeoutCause(ctx, s.budget-spent, ErrBudgetExceeded)
		}
	}
	startBudget()
	// overBudget is the error of an evaluation stopped because bctx is
	// done, while instruction inst (-1: none) ran.
	st := s.getState()
	defer s.putState(st)
	overBudget := func(inst int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		e := &BudgetError{Budget: s.budget}
		if st.total > s.maxMatch {
			// The instruction named is the one whose match went over the
			// bound, wherever the scan was stopped.
			e, inst = &BudgetError{Matches: s.maxMatch}, st.last
		}
		if inst >= 0 {
			e.InstructionID, e.Title = s.instrs[inst].id, s.instrs[inst].title
		}
		return e
	}
	for mi, msg := range messages {
		if bctx.Err() != nil || st.total > s.maxMatch {
			return Result{}, overBudget(-1)
		}
		if inst, stopped := s.scanMessage(bctx, st, mi, msg); stopped {
			return Result{}, overBudget(inst)
		}
	}
	if _, local := s.matcher.(localMatcher); local {
		if err := s.matchSemantic(bctx, st, messages); err != nil {
			if bctx.Err() != nil {
				return Result{}, overBudget(-1)
			}
			return Result{}, err
		}
	} else {
		// The wait for another matcher (an embeddings API) is not counted:
		// it has its own timeout, and its failure is an outage.
		if bctx.Err() != nil {
			return Result{}, overBudget(-1)
		}
		deadline, _ := bctx.Deadline()
		left := time.Until(deadline)
		if err := s.matchSemantic(ctx, st, messages); err != nil {
			return Result{}, err
		}
		if s.budget > 0 && len(s.queries) > 0 {
			spent = s.budget - left
			cancel()
			startBudget()
		}
	}
	if st.total > s.maxMatch {
		return Result{}, overBudget(-1)
	}
	res, ok := s.result(bctx, st, messages)
	if !ok {
		return Result{}, overBudget(-1)
	}
	s.describeSemantic(st, messages, &res)
	return res, nil
}

// scanMessage finds the StringMatch and Regex matches of message mi. It
// stops when ctx is done, returning the instruction whose pattern it was
// running (-1: none) and true.
func (s *Set) scanMessage(ctx context.Context, st *evalState, mi int, msg string) (int, bool) {
	for r := range st.occ {
		st.occ[r] = st.occ[r][:0]
	}
	addTerm := func(p *patInfo, start, end int) {
		if len(p.terms) == 0 || st.total > s.maxMatch || wordBefore(msg, start) || wordAt(msg, end) {
			return
		}
		for _, in := range p.terms {
			st.add(int(in), span{mi, start, end})
		}
	}
	if s.folded != nil {
		s.folded.Scan(msg, st.ring, func(id int32, start, end int) {
			p := &s.fpats[id]
			addTerm(p, start, end)
			for _, r := range p.lits {
				st.occ[r] = append(st.occ[r], [2]int32{int32(start), int32(end)})
			}
		})
	}
	if s.exact != nil {
		s.exact.Scan(msg, st.ring, func(id int32, start, end int) { addTerm(&s.epats[id], start, end) })
	}
	stop := func() bool { return ctx.Err() != nil || st.total > s.maxMatch }
	for r, ri := range s.regexes {
		inst := ri.inst
		if stop() {
			return inst, true
		}
		var stopped bool
		st.windows, stopped = ri.findAll(msg, st.occ[r], st.windows, stop, func(start, end int) {
			st.add(inst, span{mi, start, end})
		})
		if stopped {
			return inst, true
		}
	}
	return -1, false
}

// result applies the Allow exemptions and builds the Result. It returns
// false when ctx is done, which it checks between instructions: a request
// with millions of matches costs time here too.
func (s *Set) result(ctx context.Context, st *evalState, messages []string) (Result, bool) {
	var allowed []int // Allow instructions that matched
	for i, in := range s.instrs {
		if ctx.Err() != nil {
			return Result{}, false
		}
		h := st.hits[i]
		slices.SortFunc(h, compareSpans)
		st.hits[i] = slices.Compact(h)
		if !in.block && len(st.hits[i]) > 0 {
			allowed = append(allowed, i)
		}
	}
	exempted := map[int][]string{} // by Allow instruction: the Block instructions it exempted
	if len(allowed) > 0 {
		ex := make([]*exemptions, len(allowed))
		for k, a := range allowed {
			ex[k] = newExemptions(slices.Clone(st.hits[a]))
		}
		for i, in := range s.instrs {
			if !in.block || len(st.hits[i]) == 0 {
				continue
			}
			st.hits[i] = slices.DeleteFunc(st.hits[i], func(b span) bool {
				covered := false
				for k, a := range allowed {
					if ex[k].covers(b) {
						covered = true
						if ids := exempted[a]; len(ids) == 0 || ids[len(ids)-1] != in.id {
							exempted[a] = append(ids, in.id)
						}
					}
				}
				return covered
			})
		}
	}
	res := Result{Outcome: OutcomeApproved}
	runes := runeOffsets{messages: messages}
	blocked, redact, high := false, false, false
	allRedact := true
	for i, in := range s.instrs {
		h := st.hits[i]
		if len(h) == 0 {
			continue
		}
		if ctx.Err() != nil {
			return Result{}, false
		}
		reason := spec.ReviewReason{InstructionID: in.id, Title: in.title, Action: in.action,
			Criticality: in.criticality, Matches: make([]spec.MatchSpan, len(h))}
		for k, sp := range h {
			reason.Matches[k] = spec.MatchSpan{MessageIndex: sp.msg, Start: runes.at(sp.msg, sp.start), End: runes.at(sp.msg, sp.end)}
		}
		if !in.block {
			reason.Exempted = exempted[i]
			res.HighExemption = res.HighExemption || (in.high && len(reason.Exempted) > 0)
			res.Reasons = append(res.Reasons, reason)
			continue
		}
		res.Reasons = append(res.Reasons, reason)
		blocked = true
		high = high || in.high
		if in.redact {
			redact = true
		} else {
			allRedact = false
		}
	}
	switch {
	case !blocked:
	case high:
		res.Outcome = OutcomeRequiresIntervention
	case allRedact:
		res.Outcome = OutcomeRedacted
	default:
		res.Outcome = OutcomeChangeRequested
	}
	if redact {
		res.Redacted = s.redact(st, messages)
	}
	return res, true
}

// redact returns messages with the spans of the matching Block instructions
// that allow redaction replaced by the mark.
func (s *Set) redact(st *evalState, messages []string) []string {
	var spans []span
	for i, in := range s.instrs {
		if in.block && in.redact {
			spans = append(spans, st.hits[i]...)
		}
	}
	slices.SortFunc(spans, compareSpans)
	out := slices.Clone(messages)
	for len(spans) > 0 {
		mi := spans[0].msg
		n := 1
		for n < len(spans) && spans[n].msg == mi {
			n++
		}
		out[mi] = redactMessage(messages[mi], spans[:n], s.mark)
		spans = spans[n:]
	}
	return out
}

// redactMessage replaces the spans of msg (sorted by start) by mark, merging
// overlapping and adjacent spans.
func redactMessage(msg string, spans []span, mark string) string {
	var b strings.Builder
	b.Grow(len(msg))
	at := 0
	for i := 0; i < len(spans); {
		start, end := spans[i].start, spans[i].end
		for i++; i < len(spans) && spans[i].start <= end; i++ {
			end = max(end, spans[i].end)
		}
		b.WriteString(msg[at:start])
		b.WriteString(mark)
		at = end
	}
	b.WriteString(msg[at:])
	return b.String()
}

// exemptions answers whether a span lies within one of a set of Allow spans.
type exemptions struct {
	spans  []span // sorted
	maxEnd []int  // largest end among spans[..i] of the same message
}

func newExemptions(allow []span) *exemptions {
	slices.SortFunc(allow, compareSpans)
	e := &exemptions{spans: allow, maxEnd: make([]int, len(allow))}
	for i, sp := range allow {
		e.maxEnd[i] = sp.end
		if i > 0 && allow[i-1].msg == sp.msg {
			e.maxEnd[i] = max(e.maxEnd[i], e.maxEnd[i-1])
		}
	}
	return e
}

func (e *exemptions) covers(b span) bool {
	// The last Allow span starting at or before b in b's message.
	i, _ := slices.BinarySearchFunc(e.spans, b, func(a, b span) int {
		if c := cmp.Compare(a.msg, b.msg); c != 0 {
			return c
		}
		if a.start <= b.start {
			return -1
		}
		return 1
	})
	i--
	return i >= 0 && e.spans[i].msg == b.msg && e.maxEnd[i] >= b.end
}

// runeOffsets converts byte offsets of the messages to code point offsets.
type runeOffsets struct {
	messages []string
	tables   [][]int32 // per message: nil until needed; empty for ASCII; else the rune index at each rune's byte offset
}

func (r *runeOffsets) at(msg, off int) int {
	if r.tables == nil {
		r.tables = make([][]int32, len(r.messages))
	}
	t := r.tables[msg]
	if t == nil {
		s := r.messages[msg]
		t = []int32{}
		if !isASCII(s) {
			t = make([]int32, len(s)+1)
			n := int32(0)
			for i := range s {
				t[i] = n
				n++
			}
			t[len(s)] = n
		}
		r.tables[msg] = t
	}
	if len(t) == 0 {
		return off
	}
	return int(t[off])
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
