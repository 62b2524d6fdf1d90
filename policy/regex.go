package policy

import (
	"io"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// A Regex instruction is run with Go's regexp (RE2: linear in the text, no
// backtracking). Go's regexp runs at a few tens of MB/s on patterns without a
// literal prefix, so each pattern is analysed once at compile time for a
// prefilter:
//
//   - required literals: a small set of strings such that every match contains
//     one of them (for example "@" for an e-mail pattern, two digits for an
//     IBAN). They go into the set's case-folded Aho-Corasick automaton, and a
//     message in which none occurs is not searched at all.
//   - windows: when, in addition, a match is bounded in length (at most maxLen
//     bytes) or cannot contain some ASCII byte (a space, say), and the pattern
//     has no ^, $, \A or \z, a match can only lie near an occurrence of a
//     required literal. The regexp then runs on those windows only, each
//     widened until the bytes around it are ASCII non-word characters, so that
//     \b and \B see the same context as in the whole message. The result is
//     exactly FindAllStringIndex over the whole message (FuzzRegexWindows
//     checks it).

// Limits of the literal analysis.
const (
	maxLiteralSet   = 256   // strings in one literal set
	maxLiteralRunes = 24    // runes in one literal
	maxClassRunes   = 64    // runes of a character class turned into literals
	maxWindowLen    = 4096  // longer bounded matches are treated as unbounded
	maxLiteralCost  = 0.025 // expected occurrences per byte above which a set is useless
	windowGap       = 32    // windows closer than this are run as one
)

// regexInstr is a compiled Regex instruction.
type regexInstr struct {
	inst int // index of the instruction in the set
	re   *regexp.Regexp
	// size estimates the compiled program's instructions: a search costs
	// up to that much per byte of text.
	size int
	// resume finds the first match of re after the first rune its reader
	// gives (the context of the search); compiled when first needed.
	resume func() *regexp.Regexp
	// prefilter is set when the literals of lits were registered in the
	// set's folded automaton: with no occurrence, there is no match.
	prefilter bool
	lits      []string
	// windowed is set when the regexp may run on windows around the literal
	// occurrences only; maxLen (0: unbounded) and allowed (the bytes a match
	// may contain) bound a window.
	windowed bool
	maxLen   int
	allowed  [256]bool
}

// compileRegex compiles pattern as a Regex trigger and analyses it.
func compileRegex(pattern string, caseSensitive bool) (*regexInstr, error) {
	if !caseSensitive {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	ri := &regexInstr{re: re, size: MaxPatternProgram}
	tree, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ri, nil // cannot happen after regexp.Compile; run without prefilter
	}
	ri.size = programEstimate(tree)
	// \A, then one rune of any kind (the context), then the shortest run
	// of runes before the earliest match of the pattern, captured: the
	// construction of an unanchored search, so the match is the one
	// FindStringIndex would give from the second rune on.
	ri.resume = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\A(?s:.)(?s:.)*?(` + tree.String() + `)`)
	})
	lits, ok := requiredLiterals(tree)
	if !ok {
		return ri, nil
	}
	ri.prefilter, ri.lits = true, lits
	if hasLineOrTextAnchor(tree) {
		return ri, nil
	}
	n, bounded := maxMatchLen(tree)
	if !bounded || n > maxWindowLen {
		n = 0
	}
	markAllowed(tree, &ri.allowed)
	restricted := false
	for c := range utf8.RuneSelf {
		if !ri.allowed[c] {
			restricted = true
			break
		}
	}
	if n > 0 || restricted {
		ri.windowed, ri.maxLen = true, n
	}
	return ri, nil
}

// literalInfo describes the strings a sub-expression matches, all folded by
// [foldRune]. A nil set means unknown; a set holding "" says nothing.
type literalInfo struct {
	// exact is every string it can match, when finite and small (exactOK).
	exact   []string
	exactOK bool
	prefix  []string // every match starts with one of these
	suffix  []string // every match ends with one of these
	req     []string // every match contains one of these
}

// pre and suf return the prefix and suffix sets of li, exact when known.
func (li literalInfo) pre() []string {
	if li.exactOK {
		return li.exact
	}
	return li.prefix
}

func (li literalInfo) suf() []string {
	if li.exactOK {
		return li.exact
	}
	return li.suffix
}

func exactInfo(set []string) literalInfo { return literalInfo{exact: set, exactOK: true} }

// requiredLiterals returns a set of folded strings one of which occurs in
// every match of re, or false when no useful set is known.
func requiredLiterals(re *syntax.Regexp) ([]string, bool) {
	set := minimal(best(analyse(re)))
	if len(set) == 0 || literalCost(set) > maxLiteralCost {
		return nil, false
	}
	return set, true
}

func analyse(re *syntax.Regexp) literalInfo {
	switch re.Op {
	case syntax.OpNoMatch:
		return exactInfo([]string{})
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return exactInfo([]string{""})
	case syntax.OpLiteral:
		if n := len(re.Rune); n > maxLiteralRunes {
			first := []string{foldRunes(re.Rune[:maxLiteralRunes])}
			return literalInfo{prefix: first, suffix: []string{foldRunes(re.Rune[n-maxLiteralRunes:])}, req: first}
		}
		return exactInfo([]string{foldRunes(re.Rune)})
	case syntax.OpCharClass:
		n := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			n += int(re.Rune[i+1]-re.Rune[i]) + 1
			if n > maxClassRunes {
				return literalInfo{}
			}
		}
		var set []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				set = append(set, string(foldRune(r)))
			}
		}
		return exactInfo(dedupe(set))
	case syntax.OpCapture:
		return analyse(re.Sub[0])
	case syntax.OpQuest:
		sub := analyse(re.Sub[0])
		if sub.exactOK {
			if u := dedupe(append(slices.Clone(sub.exact), "")); len(u) <= maxLiteralSet {
				return exactInfo(u)
			}
		}
		return literalInfo{}
	case syntax.OpStar:
		return literalInfo{}
	case syntax.OpPlus:
		sub := analyse(re.Sub[0])
		return literalInfo{prefix: sub.pre(), suffix: sub.suf(), req: best(sub)}
	case syntax.OpRepeat:
		if re.Min == 0 {
			if re.Max == 0 {
				return exactInfo([]string{""})
			}
			return literalInfo{}
		}
		sub := analyse(re.Sub[0])
		if !sub.exactOK {
			li := literalInfo{prefix: sub.prefix, suffix: sub.suffix, req: best(sub)}
			if re.Min >= 2 {
				// Two consecutive copies meet in every match.
				if j, ok := cross(sub.suffix, sub.prefix); ok {
					li.req = better(li.req, j)
				}
			}
			return li
		}
		// The largest power of the sub-expression's set that fits.
		cur := sub.exact
		k := 1
		for ; k < re.Min; k++ {
			next, ok := cross(cur, sub.exact)
			if !ok {
				break
			}
			cur = next
		}
		if k == re.Min && re.Max == re.Min {
			return exactInfo(cur)
		}
		return literalInfo{prefix: cur, suffix: cur, req: cur}
	case syntax.OpConcat:
		return analyseConcat(re.Sub)
	case syntax.OpAlternate:
		// A match is a match of one alternative: the union of their sets.
		var li literalInfo
		li.exactOK = true
		union := func(acc []string, set []string, first bool) []string {
			if len(set) == 0 || (acc == nil && !first) {
				return nil
			}
			return append(acc, set...)
		}
		for i, sub := range re.Sub {
			si := analyse(sub)
			if li.exactOK = li.exactOK && si.exactOK; li.exactOK {
				li.exact = append(li.exact, si.exact...)
			}
			li.prefix = union(li.prefix, si.pre(), i == 0)
			li.suffix = union(li.suffix, si.suf(), i == 0)
			li.req = union(li.req, best(si), i == 0)
		}
		if li.exactOK {
			if li.exact = dedupe(li.exact); len(li.exact) <= maxLiteralSet {
				return exactInfo(li.exact)
			}
			li.exactOK, li.exact = false, nil
		}
		for _, set := range []*[]string{&li.prefix, &li.suffix, &li.req} {
			if *set = dedupe(*set); len(*set) > maxLiteralSet {
				*set = nil
			}
		}
		return li
	}
	// OpAnyChar, OpAnyCharNotNL and anything unknown: no information.
	return literalInfo{}
}

// analyseConcat combines the sets of consecutive sub-expressions: every
// match holds a match of each, and where two meet, a suffix of the first
// followed by a prefix of the second.
func analyseConcat(subs []*syntax.Regexp) literalInfo {
	var li literalInfo
	// end: every match of the sub-expressions so far ends with one of these.
	end := []string{""}
	// start: every match starts with one of these; growing while exact.
	start, growing := []string{""}, true
	exactOK := true
	for _, sub := range subs {
		si := analyse(sub)
		li.req = better(li.req, best(si))
		if growing {
			if next, ok := cross(start, si.pre()); ok && si.pre() != nil {
				start = next
			}
			growing = si.exactOK
		}
		if si.exactOK {
			next, ok := cross(end, si.exact)
			if !ok {
				next, exactOK = si.exact, false
			}
			end = next
		} else {
			exactOK = false
			if j, ok := cross(end, si.prefix); ok && si.prefix != nil {
				li.req = better(li.req, j)
			}
			end = si.suffix
			if end == nil {
				end = []string{""}
			}
		}
		li.req = better(li.req, end)
	}
	if exactOK {
		return literalInfo{exact: end, exactOK: true, req: li.req}
	}
	li.prefix, li.suffix = start, end
	return li
}

// best returns the most selective usable set of li, reduced to its minimal
// strings, or nil.
func best(li literalInfo) []string {
	return better(better(li.pre(), li.suf()), li.req)
}

// better returns the more selective of two required sets; nil or a set
// holding "" is no set.
func better(a, b []string) []string {
	if slices.Contains(a, "") {
		a = nil
	}
	if slices.Contains(b, "") {
		b = nil
	}
	switch {
	case len(a) == 0:
		return b
	case len(b) == 0:
		return a
	case setCost(b) < setCost(a):
		return b
	}
	return a
}

// setCost is literalCost plus a little per string, so that of two very
// selective sets the smaller one wins (fewer automaton states).
func setCost(set []string) float64 { return literalCost(set) + 1e-7*float64(len(set)) }

// minimal drops the strings of set that contain another of its strings (an
// occurrence of those implies one of the shorter); nil when set contains ""
// (which requires nothing) or is empty. set holds distinct strings.
func minimal(set []string) []string {
	if len(set) == 0 || slices.Contains(set, "") {
		return nil
	}
	byLen := slices.Clone(set)
	slices.SortStableFunc(byLen, func(a, b string) int { return len(a) - len(b) })
	out := make([]string, 0, len(set))
	for _, s := range byLen {
		redundant := false
		for _, t := range out {
			if len(t) < len(s) && strings.Contains(s, t) {
				redundant = true
				break
			}
		}
		if !redundant {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// cross returns every concatenation of a string of a with one of b, or false
// when the product is too large.
func cross(a, b []string) ([]string, bool) {
	if len(a)*len(b) > maxLiteralSet {
		return nil, false
	}
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			if utf8.RuneCountInString(x)+utf8.RuneCountInString(y) > maxLiteralRunes {
				return nil, false
			}
			out = append(out, x+y)
		}
	}
	return dedupe(out), true
}

func dedupe(set []string) []string {
	slices.Sort(set)
	return slices.Compact(set)
}

func foldRunes(rs []rune) string {
	b := make([]byte, 0, len(rs))
	for _, r := range rs {
		b = utf8.AppendRune(b, foldRune(r))
	}
	return string(b)
}

// literalCost estimates the occurrences per byte of text of any string of
// set, from rough frequencies of folded characters in prose.
func literalCost(set []string) float64 {
	c := 0.0
	for _, s := range set {
		p := 1.0
		for _, r := range s {
			p *= runeFrequency(r)
		}
		c += p
	}
	return c
}

func runeFrequency(r rune) float64 {
	switch {
	case r >= 'A' && r <= 'Z': // folded letters
		return letterFrequency[r-'A']
	case r >= '0' && r <= '9':
		return 0.002
	case r == ' ':
		return 0.16
	case r == '.' || r == ',' || r == '\n':
		return 0.01
	case r < utf8.RuneSelf:
		return 0.002
	}
	return 0.005
}

// letterFrequency is the share of each letter in English prose, scaled to the
// share of letters among all characters (about 0.8).
var letterFrequency = [26]float64{
	0.065, 0.012, 0.022, 0.034, 0.1, 0.018, 0.016, 0.049, 0.056, 0.001, 0.006, 0.032, 0.019,
	0.054, 0.06, 0.015, 0.001, 0.048, 0.05, 0.072, 0.022, 0.008, 0.019, 0.001, 0.016, 0.001,
}

// hasLineOrTextAnchor reports whether re uses ^, $, \A or \z, which see the
// ends of the text and so cannot run on a window.
func hasLineOrTextAnchor(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return true
	}
	return slices.ContainsFunc(re.Sub, hasLineOrTextAnchor)
}

// maxMatchLen returns the most bytes a match of re can span, or false when
// unbounded. An invalid byte of the text counts as U+FFFD of width 1.
func maxMatchLen(re *syntax.Regexp) (int, bool) {
	const limit = 1 << 20
	switch re.Op {
	case syntax.OpNoMatch, syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0, true
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			w := runeLen(r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					w = max(w, runeLen(f))
				}
			}
			n += w
		}
		return n, true
	case syntax.OpCharClass:
		w := 0
		for i := 1; i < len(re.Rune); i += 2 {
			w = max(w, runeLen(re.Rune[i]))
		}
		return w, true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax, true
	case syntax.OpCapture, syntax.OpQuest:
		return maxMatchLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		return 0, false
	case syntax.OpRepeat:
		if re.Max < 0 {
			return 0, false
		}
		n, ok := maxMatchLen(re.Sub[0])
		if !ok || n*re.Max > limit {
			return 0, false
		}
		return n * re.Max, true
	case syntax.OpConcat:
		total := 0
		for _, sub := range re.Sub {
			n, ok := maxMatchLen(sub)
			if !ok || total+n > limit {
				return 0, false
			}
			total += n
		}
		return total, true
	case syntax.OpAlternate:
		m := 0
		for _, sub := range re.Sub {
			n, ok := maxMatchLen(sub)
			if !ok {
				return 0, false
			}
			m = max(m, n)
		}
		return m, true
	}
	return 0, false
}

// runeLen is the UTF-8 length of r, counting surrogates and invalid runes
// (which match as U+FFFD or not at all) by the length of their range.
func runeLen(r rune) int {
	switch {
	case r < 0x80:
		return 1
	case r < 0x800:
		return 2
	case r < 0x10000:
		return 3
	}
	return 4
}

// markAllowed marks in allowed every byte that can occur in a match of re: the
// ASCII characters it can match, and all bytes from 0x80 when it can match a
// non-ASCII rune (or U+FFFD, an invalid byte).
func markAllowed(re *syntax.Regexp, allowed *[256]bool) {
	markRune := func(r rune) {
		if r >= 0 && r < utf8.RuneSelf {
			allowed[r] = true
			return
		}
		for c := 0x80; c < 256; c++ {
			allowed[c] = true
		}
	}
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			markRune(r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					markRune(f)
				}
			}
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1] && r < utf8.RuneSelf; r++ {
				allowed[r] = true
			}
			if re.Rune[i+1] >= utf8.RuneSelf {
				markRune(utf8.RuneSelf)
			}
		}
	case syntax.OpAnyChar:
		for c := range allowed {
			allowed[c] = true
		}
	case syntax.OpAnyCharNotNL:
		for c := range allowed {
			if c != '\n' {
				allowed[c] = true
			}
		}
	}
	for _, sub := range re.Sub {
		markAllowed(sub, allowed)
	}
}

// findAll returns the non-empty matches of the regexp in s as byte spans,
// exactly as FindAllStringIndex(s, -1) without its empty matches. occ holds
// the byte spans of the required literals found in s when the instruction has
// a prefilter (possibly none: then there is no match).
//
// stop, when not nil, is asked now and then whether to stop: between
// windows, and every stopCheckRunes runes of a search that could cost more
// than fastSearchCost. findAll then returns true, having emitted only some of
// the matches.
func (ri *regexInstr) findAll(s string, occ [][2]int32, windows [][2]int, stop func() bool, emit func(start, end int)) ([][2]int, bool) {
	if ri.prefilter && len(occ) == 0 {
		return windows, false
	}
	if !ri.windowed {
		return windows, ri.run(s, 0, len(s), stop, emit)
	}
	windows = ri.windows(s, occ, windows[:0])
	covered := 0
	for _, w := range windows {
		covered += w[1] - w[0]
	}
	if covered > len(s)/2 {
		return windows, ri.run(s, 0, len(s), stop, emit)
	}
	for _, w := range windows {
		if stop != nil && stop() || ri.run(s, w[0], w[1], stop, emit) {
			return windows, true
		}
	}
	return windows, false
}

// Interruptible searches.
const (
	// fastSearchCost is the most text bytes times program size searched
	// in one uninterrupted call: about 50 ms at worst.
	fastSearchCost = 1 << 22
	// stopCheckRunes is how many runes an interruptible search reads
	// between two calls of its stop function.
	stopCheckRunes = 256
)

// run emits the non-empty matches in s[from:to], as FindAllStringIndex
// would find them in s[from:to]. A search that could cost more than
// fastSearchCost reads the text through a stopReader, so that it stops
// soon after stop says so; run then returns true.
func (ri *regexInstr) run(s string, from, to int, stop func() bool, emit func(start, end int)) bool {
	if stop == nil || (to-from)*ri.size <= fastSearchCost {
		for _, m := range ri.re.FindAllStringIndex(s[from:to], -1) {
			if m[1] > m[0] {
				emit(from+m[0], from+m[1])
			}
		}
		return false
	}
	return ri.findAllStop(s[from:to], stop, func(start, end int) { emit(from+start, from+end) })
}

// findAllStop emits the non-empty matches of FindAllStringIndex(s, -1),
// searching through a stopReader; it returns true, having emitted only some
// of them, when stop said to stop. It follows FindAllStringIndex step by
// step: the first match at or after pos, where an empty match right after
// the previous match is skipped and moves pos one rune on. A search from pos
// > 0 sees the rune before pos as its context (for \b, ^ in (?m) ...): the
// reader gives that rune first and the resume expression skips it.
//
// When every match starts with a literal prefix, each search starts at the
// prefix's next occurrence (found by strings.Index, as regexp does for a
// string): no match starts before it.
func (ri *regexInstr) findAllStop(s string, stop func() bool, emit func(start, end int)) bool {
	rd := &stopReader{stop: stop}
	prefix, _ := ri.re.LiteralPrefix()
	prevEnd := -1
	for pos := 0; pos <= len(s); {
		if prefix != "" {
			i := strings.Index(s[pos:], prefix)
			if i < 0 {
				return false
			}
			pos += i
		}
		var start, end int
		if pos == 0 {
			rd.reset(s, 0, 0, 0)
			m := ri.re.FindReaderIndex(rd)
			if rd.stopped {
				return true
			}
			if m == nil {
				return false
			}
			start, end = m[0], m[1]
		} else {
			r, w := utf8.DecodeLastRuneInString(s[:pos])
			base := pos - w
			rd.reset(s, pos, r, w)
			m := ri.resume().FindReaderSubmatchIndex(rd)
			if rd.stopped {
				return true
			}
			if m == nil {
				return false
			}
			start, end = base+m[2], base+m[3]
		}
		accept := true
		if end == pos {
			if start == prevEnd {
				accept = false
			}
			if pos < len(s) {
				_, w := utf8.DecodeRuneInString(s[pos:])
				pos += w
			} else {
				pos++
			}
		} else {
			pos = end
		}
		prevEnd = end
		if accept && end > start {
			emit(start, end)
		}
	}
	return false
}

// stopReader reads s from pos as regexp reads a string (an invalid byte is
// U+FFFD of width 1), after a first rune given to it, and ends early (io.EOF)
// when stop says so.
type stopReader struct {
	s       string
	pos     int
	first   rune
	firstW  int // width of first; 0: none pending
	left    int // runes until stop is asked again
	stop    func() bool
	stopped bool
}

func (r *stopReader) reset(s string, pos int, first rune, firstW int) {
	r.s, r.pos, r.first, r.firstW, r.left, r.stopped = s, pos, first, firstW, stopCheckRunes, false
}

// ReadRune implements io.RuneReader.
func (r *stopReader) ReadRune() (rune, int, error) {
	if r.firstW > 0 {
		w := r.firstW
		r.firstW = 0
		return r.first, w, nil
	}
	if r.stopped || r.pos >= len(r.s) {
		return 0, 0, io.EOF
	}
	if r.left--; r.left <= 0 {
		r.left = stopCheckRunes
		if r.stop() {
			r.stopped = true
			return 0, 0, io.EOF
		}
	}
	if c := r.s[r.pos]; c < utf8.RuneSelf {
		r.pos++
		return rune(c), 1, nil
	}
	c, w := utf8.DecodeRuneInString(r.s[r.pos:])
	r.pos += w
	return c, w, nil
}

// windows returns, sorted and disjoint, the byte ranges of s outside which no
// match lies, given the occurrences of the required literals in order of end
// offset (as the automaton reports them).
//
// A match containing occurrence [p, q) starts at or after q-maxLen and after
// the run of allowed bytes ending at p, and ends at or before p+maxLen and
// before the run of allowed bytes starting at q. Occurrences are grouped into
// clusters, each covered by one range from the smallest such start to the
// largest such end of its members; the runs are walked once per cluster.
func (ri *regexInstr) windows(s string, occ [][2]int32, out [][2]int) [][2]int {
	bounded := ri.maxLen > 0
	var minP, minQ, maxP, hi int
	open := false
	closeCluster := func() {
		lo, bound := minP, 0
		if bounded {
			bound = max(0, minQ-ri.maxLen)
		}
		for lo > bound && ri.allowed[s[lo-1]] {
			lo--
		}
		out = append(out, [2]int{lo, hi})
	}
	for _, o := range occ {
		p, q := int(o[0]), int(o[1])
		if open && p <= hi {
			minP, maxP = min(minP, p), max(maxP, p)
		} else {
			if open {
				closeCluster()
			}
			open, minP, minQ, maxP, hi = true, p, q, p, q
		}
		// Bytes from the cluster's first q up to hi are allowed: extend.
		bound := len(s)
		if bounded {
			bound = min(len(s), maxP+ri.maxLen)
		}
		for hi = max(hi, q); hi < bound && ri.allowed[s[hi]]; hi++ {
		}
	}
	if open {
		closeCluster()
	}
	if !slices.IsSortedFunc(out, func(a, b [2]int) int { return a[0] - b[0] }) {
		slices.SortFunc(out, func(a, b [2]int) int { return a[0] - b[0] })
	}
	// Widen each to ASCII non-word neighbours, then merge.
	merged := out[:0]
	for _, w := range out {
		for w[0] > 0 && !safeEdge(s[w[0]-1]) {
			w[0]--
		}
		for w[1] < len(s) && !safeEdge(s[w[1]]) {
			w[1]++
		}
		// Windows closer than windowGap are merged: no match starts between
		// them, and one regexp call costs about as much as that many bytes.
		if n := len(merged); n > 0 && w[0] <= merged[n-1][1]+windowGap {
			merged[n-1][1] = max(merged[n-1][1], w[1])
			continue
		}
		merged = append(merged, w)
	}
	return merged
}

// safeEdge reports whether a window may end next to byte c: an ASCII byte that
// is not a word character for \b.
func safeEdge(c byte) bool {
	return c < utf8.RuneSelf && !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
}
