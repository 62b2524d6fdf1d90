package judge

import (
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// injectionPatterns are the phrasings of text that addresses the judge
// rather than saying something to classify: telling it to drop its
// instructions, dictating its answer, giving it a new role, naming its
// prompt, or imitating the markers that delimit the data. They run on the
// text normalised by normaliseForInjection (compatibility-folded, lower
// case, format characters dropped, white space collapsed). The list is
// small on purpose: a sentence it flags costs a person a look, one it misses
// still goes to the judge framed as data.
var injectionPatterns = regexp.MustCompile(strings.Join([]string{
	// "ignore all previous instructions", "disregard the system prompt",
	// in English, German, French and Spanish; only determiners may stand
	// between the verb and the noun, so "forget to follow the assembly
	// instructions" is not one.
	`\b(?:ignore|ignoring|disregard|forget|override|bypass|ignoriere|ignorieren|vergiss|vergessen|ignorez|ignore[sr]|oublie[rz]?|ignora|ignorar|olvida|olvidar)\b(?:\W+(?:all|any|the|your|my|of|previous|prior|above|earlier|preceding|foregoing|these|those|system|other|every|given|original|alle|vorherigen|bisherigen|die|deine|les|tes|vos|toutes|précédentes|las|tus|todas|anteriores))*\W+(?:instructions?|prompts?|directives?|guidelines|anweisungen|regeln|consignes|instrucciones)\b`,
	// "answer no", "respond with false", "say: no."
	`\b(?:answer|respond|reply|say|output|return|classify|label|mark|decide)\b(?:\W+(?:with|only|just|simply|always|it|this|that|as|the|word|a|an|:))*\W+["'“‘]?(?:no|false|not a match|no match)\b(?:["'”’]|\s*[.!,;:)]|\s*$|\s+(?:and|only|here|regardless|always|to this|for this))`,
	// "match": false, written into the text.
	`["']?\bmatch["']?\s*[:=]\s*false\b`,
	`\byou are now\b`,
	`\bsystem prompt\b`,
	`\bas an ai\b`,
	// The markers of Client's questions.
	`[⟦⟧]`,
	`\b(?:begin|end)[\s_-]+data\b`,
}, "|"))

// addressesJudge reports whether s holds text that addresses the judge
// (see injectionPatterns).
func addressesJudge(s string) bool {
	return injectionPatterns.MatchString(normaliseForInjection(s))
}

// normaliseForInjection folds s so that look-alike spellings (full-width
// letters, ligatures, zero-width characters between letters, odd spaces)
// read as plain words: NFKC, lower case, format characters dropped, and
// every run of white space one space.
func normaliseForInjection(s string) string {
	s = norm.NFKC.String(s)
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Cf, r):
			continue
		case unicode.IsSpace(r):
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
