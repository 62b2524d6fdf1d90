package policy

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
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
)

// regexInstr is a compiled Regex instruction.
type regexInstr struct {
	inst int // index of the instruction in the set
	re   *regexp.Regexp
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
	ri := &regexInstr{re: re}
	tree, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ri, nil // cannot happen after regexp.Compile; run without prefilter
	}
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
// [foldRune].
type literalInfo struct {
	exact []string // every string it can match, when finite and small (exactOK)
	// exactOK reports that exact is known; it may contain "".
	exactOK bool
	// req: every match contains one of these strings; nil when unknown.
	req []string
}

// requiredLiterals returns a set of folded strings one of which occurs in
// every match of re, or false when no useful set is known.
func requiredLiterals(re *syntax.Regexp) ([]string, bool) {
	set := best(analyse(re))
	if len(set) == 0 || literalCost(set) > maxLiteralCost {
		return nil, false
	}
	return set, true
}

func analyse(re *syntax.Regexp) literalInfo {
	switch re.Op {
	case syntax.OpNoMatch:
		return literalInfo{exact: []string{}, exactOK: true}
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return literalInfo{exact: []string{""}, exactOK: true}
	case syntax.OpLiteral:
		if len(re.Rune) > maxLiteralRunes {
			s := foldRunes(re.Rune[:maxLiteralRunes])
			return literalInfo{req: []string{s}}
		}
		return literalInfo{exact: []string{foldRunes(re.Rune)}, exactOK: true}
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
		return literalInfo{exact: dedupe(set), exactOK: true}
	case syntax.OpCapture:
		return analyse(re.Sub[0])
	case syntax.OpQuest:
		sub := analyse(re.Sub[0])
		if sub.exactOK {
			if u := dedupe(append(slices.Clone(sub.exact), "")); len(u) <= maxLiteralSet {
				return literalInfo{exact: u, exactOK: true}
			}
		}
		return literalInfo{}
	case syntax.OpStar:
		return literalInfo{}
	case syntax.OpPlus:
		return literalInfo{req: best(analyse(re.Sub[0]))}
	case syntax.OpRepeat:
		if re.Min == 0 {
			if re.Max == 0 {
				return literalInfo{exact: []string{""}, exactOK: true}
			}
			return literalInfo{}
		}
		sub := analyse(re.Sub[0])
		if !sub.exactOK {
			return literalInfo{req: sub.req}
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
			return literalInfo{exact: cur, exactOK: true}
		}
		return literalInfo{req: better(cur, sub.req)}
	case syntax.OpConcat:
		// Every match holds a match of each sub-expression, and of each run of
		// consecutive sub-expressions with exact sets (their product).
		var req []string
		run := []string{""}
		exactOK := true
		for _, sub := range re.Sub {
			si := analyse(sub)
			req = better(req, si.req)
			if !si.exactOK {
				req = better(req, run)
				run, exactOK = []string{""}, false
				continue
			}
			next, ok := cross(run, si.exact)
			if !ok {
				req = better(req, run)
				run, exactOK = si.exact, false
				continue
			}
			run = next
		}
		if exactOK {
			return literalInfo{exact: run, exactOK: true, req: req}
		}
		return literalInfo{req: better(req, run)}
	case syntax.OpAlternate:
		// A match is a match of one alternative: the union of their sets.
		var exact, req []string
		exactOK, reqOK := true, true
		for _, sub := range re.Sub {
			si := analyse(sub)
			if exactOK = exactOK && si.exactOK; exactOK {
				exact = append(exact, si.exact...)
			}
			if b := best(si); reqOK && len(b) > 0 {
				req = append(req, b...)
			} else {
				reqOK = false
			}
		}
		if !reqOK {
			req = nil
		}
		if exactOK {
			exact = dedupe(exact)
			if len(exact) <= maxLiteralSet {
				return literalInfo{exact: exact, exactOK: true}
			}
		}
		req = dedupe(req)
		if len(req) > maxLiteralSet {
			req = nil
		}
		return literalInfo{req: req}
	}
	// OpAnyChar, OpAnyCharNotNL and anything unknown: no information.
	return literalInfo{}
}

// best returns the most selective usable set of li (exact or req), reduced to
// its minimal strings, or nil.
func best(li literalInfo) []string {
	var e []string
	if li.exactOK {
		e = li.exact
	}
	return better(minimal(e), minimal(li.req))
}

// better returns the more selective of two required sets (nil is no set).
func better(a, b []string) []string {
	a, b = minimal(a), minimal(b)
	switch {
	case len(a) == 0:
		return b
	case len(b) == 0:
		return a
	case literalCost(b) < literalCost(a):
		return b
	}
	return a
}

// minimal drops the strings of set that contain another of its strings (an
// occurrence of those implies one of the shorter); nil when set contains ""
// (which requires nothing) or is empty.
func minimal(set []string) []string {
	if len(set) == 0 || slices.Contains(set, "") {
		return nil
	}
	out := make([]string, 0, len(set))
	for i, s := range set {
		redundant := false
		for j, t := range set {
			if i != j && len(t) <= len(s) && strings.Contains(s, t) && (len(t) < len(s) || j < i) {
				redundant = true
				break
			}
		}
		if !redundant {
			out = append(out, s)
		}
	}
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
func (ri *regexInstr) findAll(s string, occ [][2]int32, windows [][2]int, emit func(start, end int)) [][2]int {
	if ri.prefilter && len(occ) == 0 {
		return windows
	}
	if !ri.windowed {
		ri.run(s, 0, len(s), emit)
		return windows
	}
	windows = ri.windows(s, occ, windows[:0])
	covered := 0
	for _, w := range windows {
		covered += w[1] - w[0]
	}
	if covered > len(s)/2 {
		ri.run(s, 0, len(s), emit)
		return windows
	}
	for _, w := range windows {
		ri.run(s, w[0], w[1], emit)
	}
	return windows
}

func (ri *regexInstr) run(s string, from, to int, emit func(start, end int)) {
	for _, m := range ri.re.FindAllStringIndex(s[from:to], -1) {
		if m[1] > m[0] {
			emit(from+m[0], from+m[1])
		}
	}
}

// windows returns, sorted and disjoint, the byte ranges of s outside which no
// match lies, given the occurrences of the required literals.
func (ri *regexInstr) windows(s string, occ [][2]int32, out [][2]int) [][2]int {
	for _, o := range occ {
		p, q := int(o[0]), int(o[1])
		lo, hi := p, q
		// A match containing [p, q) starts at or after q-maxLen, ends at or
		// before p+maxLen, and holds allowed bytes only.
		minLo, maxHi := 0, len(s)
		if ri.maxLen > 0 {
			minLo, maxHi = max(0, q-ri.maxLen), min(len(s), p+ri.maxLen)
		}
		for lo > minLo && ri.allowed[s[lo-1]] {
			lo--
		}
		for hi < maxHi && ri.allowed[s[hi]] {
			hi++
		}
		out = append(out, [2]int{lo, hi})
	}
	slices.SortFunc(out, func(a, b [2]int) int { return a[0] - b[0] })
	// Widen each to ASCII non-word neighbours, then merge.
	merged := out[:0]
	for _, w := range out {
		for w[0] > 0 && !safeEdge(s[w[0]-1]) {
			w[0]--
		}
		for w[1] < len(s) && !safeEdge(s[w[1]]) {
			w[1]++
		}
		if n := len(merged); n > 0 && w[0] <= merged[n-1][1] {
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
