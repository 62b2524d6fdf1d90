package prefilter

import (
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aiusage/kit/policy/internal/fold"
)

// literalInfo describes the strings a sub-expression matches, all folded by
// [fold.Rune]. A nil set means unknown; a set holding "" says nothing.
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
			first := []string{fold.Runes(re.Rune[:maxLiteralRunes])}
			return literalInfo{prefix: first, suffix: []string{fold.Runes(re.Rune[n-maxLiteralRunes:])}, req: first}
		}
		return exactInfo([]string{fold.Runes(re.Rune)})
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
				set = append(set, string(fold.Rune(r)))
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
