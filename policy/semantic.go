package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aiusage/kit/policy/internal/fold"
)

// SemanticMatcher decides which text segments are similar in meaning to each
// query. Semantic instructions are evaluated through it: the segments are the
// sentences of the request's messages (see [Set.Evaluate]), the queries the
// instructions' texts. Implementations must be safe for concurrent use.
// [LexicalMatcher] is the built-in one (the default), [NGramMatcher] the
// older one; package policy/embeddings provides one over an embeddings API.
type SemanticMatcher interface {
	// Match returns, for each query i, the indexes of the segments similar to
	// it (out[i]), so len(out) == len(queries). An error means evaluation
	// cannot run (the caller reports POLICY_ERROR).
	Match(ctx context.Context, segments []string, queries []string) ([][]int, error)
}

// SemanticScorer is a [SemanticMatcher] that can also tell how similar each
// segment is to each query. When the matcher of a [Set] is one, a Semantic
// match carries its score ([spec.MatchSpan] Similarity), and an evaluation
// (aiusage policy eval) can try several thresholds with one call. The
// built-in matchers and the embeddings client implement it.
type SemanticScorer interface {
	SemanticMatcher
	// Scores returns, for each query i, the similarity of each segment j to
	// it (out[i][j]), so len(out) == len(queries) and len(out[i]) ==
	// len(segments). Scores are at most 1; higher is more similar.
	Scores(ctx context.Context, segments []string, queries []string) ([][]float64, error)
	// MatchThreshold is the score at which Match reports a segment: Match
	// answers the segments whose score is at least MatchThreshold.
	MatchThreshold() float64
}

// Defaults of [NGramMatcher].
const (
	// DefaultNGram is the default n-gram length, in runes.
	DefaultNGram = 3
	// DefaultNGramThreshold is the default cosine similarity at which a
	// segment matches a query. At 0.45, a sentence that rewords the query
	// (changed word order, inflections, a few words added or dropped) matches,
	// scoring about 0.5 to 0.9, while unrelated text, which shares only
	// common n-grams, scores about 0.0 to 0.3.
	DefaultNGramThreshold = 0.45
)

// NGramMatcher is the earlier built-in [SemanticMatcher], kept for
// compatibility ([LexicalMatcher] is the default): it needs no network and
// compares character n-grams. Each text is normalised (case-folded, every
// run of characters other than letters, digits and marks made one space),
// each word padded with a space on both sides, and cut into overlapping
// n-grams of N runes; a segment matches a query when the cosine similarity of
// their n-gram count vectors is at least Threshold. It catches near-duplicates
// and light rewordings, not synonyms: use an embeddings model (package
// policy/embeddings) for meaning.
type NGramMatcher struct {
	// N is the n-gram length in runes; 0 means DefaultNGram (3).
	N int
	// Threshold is the cosine similarity (0..1] at which a segment matches;
	// 0 means DefaultNGramThreshold (0.45).
	Threshold float64
}

var _ SemanticScorer = NGramMatcher{}

// Match implements [SemanticMatcher]. It fails only when ctx is done.
func (m NGramMatcher) Match(ctx context.Context, segments []string, queries []string) ([][]int, error) {
	scores, err := m.Scores(ctx, segments, queries)
	if err != nil {
		return nil, err
	}
	return matchScores(scores, m.MatchThreshold()), nil
}

// Scores implements [SemanticScorer]: the cosine similarities of the n-gram
// vectors, in [0, 1]. It fails only when ctx is done.
func (m NGramMatcher) Scores(ctx context.Context, segments []string, queries []string) ([][]float64, error) {
	n := m.N
	if n <= 0 {
		n = DefaultNGram
	}
	vec := func(s string) ngramVector { return newNGramVector(s, n) }
	return scoreAll(ctx, segments, queries, vec, ngramVector.cosine)
}

// scoreAll returns the similarity of each segment to each query
// (out[query][segment]), each text made a vector once by vec. It fails only
// when ctx is done, which it checks every 64 segments.
func scoreAll[V any](ctx context.Context, segments, queries []string, vec func(string) V, sim func(V, V) float64) ([][]float64, error) {
	qv := make([]V, len(queries))
	for i, q := range queries {
		qv[i] = vec(q)
	}
	out := make([][]float64, len(queries))
	for i := range out {
		out[i] = make([]float64, len(segments))
	}
	for j, seg := range segments {
		if j%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		sv := vec(seg)
		for i := range qv {
			out[i][j] = sim(sv, qv[i])
		}
	}
	return out, nil
}

// MatchThreshold implements [SemanticScorer]: Threshold, or
// DefaultNGramThreshold when it is 0.
func (m NGramMatcher) MatchThreshold() float64 {
	if m.Threshold <= 0 {
		return DefaultNGramThreshold
	}
	return m.Threshold
}

// matchScores returns, for each query, the segments whose score reaches
// threshold, the answer of Match from that of Scores.
func matchScores(scores [][]float64, threshold float64) [][]int {
	out := make([][]int, len(scores))
	for i, row := range scores {
		for j, s := range row {
			if s >= threshold {
				out[i] = append(out[i], j)
			}
		}
	}
	return out
}

// Similarity returns the cosine similarity of the n-gram vectors of a and b
// as Match computes it (0 when either has no n-gram).
func (m NGramMatcher) Similarity(a, b string) float64 {
	n := m.N
	if n <= 0 {
		n = DefaultNGram
	}
	return newNGramVector(a, n).cosine(newNGramVector(b, n))
}

// ngramVector is a sparse vector of n-gram counts, keyed by a hash of the
// n-gram's runes.
type ngramVector struct {
	counts map[uint64]float64
	norm   float64
}

func newNGramVector(s string, n int) ngramVector {
	v := ngramVector{counts: map[uint64]float64{}}
	word := make([]rune, 0, 32)
	flush := func() {
		if len(word) == 0 {
			return
		}
		padded := make([]rune, 0, len(word)+2)
		padded = append(append(append(padded, ' '), word...), ' ')
		if len(padded) < n {
			v.counts[hashRunes(padded)]++
		}
		for i := 0; i+n <= len(padded); i++ {
			v.counts[hashRunes(padded[i:i+n])]++
		}
		word = word[:0]
	}
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) {
			word = append(word, unicode.ToLower(fold.Rune(r)))
			continue
		}
		flush()
	}
	flush()
	for _, c := range v.counts {
		v.norm += c * c
	}
	v.norm = math.Sqrt(v.norm)
	return v
}

func hashRunes(rs []rune) uint64 {
	h := uint64(14695981039346656037)
	for _, r := range rs {
		h ^= uint64(r)
		h *= 1099511628211
	}
	return h
}

func (v ngramVector) cosine(w ngramVector) float64 {
	if v.norm == 0 || w.norm == 0 {
		return 0
	}
	a, b := v.counts, w.counts
	if len(b) < len(a) {
		a, b = b, a
	}
	dot := 0.0
	for k, c := range a {
		dot += c * b[k]
	}
	return dot / (v.norm * w.norm)
}

// maxSegmentRunes is the longest segment given to the semantic matcher: a
// longer sentence is cut into windows of at most this many runes, at spaces
// where possible.
const maxSegmentRunes = 400

// Segments returns the segments [Set.Evaluate] gives the SemanticMatcher for
// a message: its sentences, long ones cut into windows of at most 400 runes
// (see segmentMessage). An evaluation of a matcher on whole messages uses it
// to score a message as Evaluate would: by its most similar segment.
func Segments(message string) []string {
	segs := segmentMessage(0, message, nil)
	out := make([]string, len(segs))
	for i, sg := range segs {
		out[i] = message[sg.start:sg.end]
	}
	return out
}

// segment is a byte span of a message given to the semantic matcher.
type segment struct {
	msg, start, end int
}

// segmentMessage appends the segments of message s (index msg): its
// sentences, each ending after a run of ., !, ?, …, 。, ！ or ？ followed by a
// space or the end of the text, or at a line break; trimmed of white space,
// without those holding no letter or digit, and long ones cut by
// maxSegmentRunes.
func segmentMessage(msg int, s string, out []segment) []segment {
	start := 0
	emit := func(from, to int) {
		for from < to {
			r, w := utf8.DecodeRuneInString(s[from:])
			if !unicode.IsSpace(r) {
				break
			}
			from += w
		}
		for to > from {
			r, w := utf8.DecodeLastRuneInString(s[from:to])
			if !unicode.IsSpace(r) {
				break
			}
			to -= w
		}
		out = appendWindows(msg, s, from, to, out)
	}
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		i += w
		switch {
		case r == '\n':
			emit(start, i)
			start = i
		case isSentenceEnd(r):
			for i < len(s) {
				r2, w2 := utf8.DecodeRuneInString(s[i:])
				if !isSentenceEnd(r2) {
					break
				}
				i += w2
			}
			if r2, _ := utf8.DecodeRuneInString(s[i:]); i == len(s) || unicode.IsSpace(r2) {
				emit(start, i)
				start = i
			}
		}
	}
	emit(start, len(s))
	return out
}

func isSentenceEnd(r rune) bool {
	switch r {
	case '.', '!', '?', '…', '。', '！', '？':
		return true
	}
	return false
}

// appendWindows appends s[from:to] as one segment, or as windows of at most
// maxSegmentRunes runes when longer; segments without a letter or digit are
// left out.
func appendWindows(msg int, s string, from, to int, out []segment) []segment {
	for from < to {
		end, lastSpace, n := from, -1, 0
		for end < to && n < maxSegmentRunes {
			r, w := utf8.DecodeRuneInString(s[end:])
			if unicode.IsSpace(r) {
				lastSpace = end
			}
			end += w
			n++
		}
		next := end
		if end < to && lastSpace > from {
			end, next = lastSpace, lastSpace
		}
		// Trim the window's white space (a cut at a space leaves it at the
		// start of the next window).
		for next < to {
			r, w := utf8.DecodeRuneInString(s[next:])
			if !unicode.IsSpace(r) {
				break
			}
			next += w
		}
		for end > from {
			r, w := utf8.DecodeLastRuneInString(s[from:end])
			if !unicode.IsSpace(r) {
				break
			}
			end -= w
		}
		if hasWordRune(s[from:end]) {
			out = append(out, segment{msg, from, end})
		}
		from = next
	}
	return out
}

func hasWordRune(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// checkScores validates a SemanticScorer's answer.
func checkScores(out [][]float64, segments, queries int) error {
	if len(out) != queries {
		return fmt.Errorf("policy: semantic scorer returned %d results for %d queries", len(out), queries)
	}
	for _, row := range out {
		if len(row) != segments {
			return fmt.Errorf("policy: semantic scorer returned %d scores for %d segments", len(row), segments)
		}
		for _, s := range row {
			if math.IsNaN(s) {
				return errors.New("policy: semantic scorer returned NaN")
			}
		}
	}
	return nil
}

// checkJudgements validates a JudgingMatcher's answer: one row per query,
// segments in range and not repeated within a row, known verdicts, and a
// VerdictJudge quote that occurs in its segment.
func checkJudgements(out [][]Judgement, segments []string, queries int) error {
	if len(out) != queries {
		return fmt.Errorf("policy: judging matcher returned %d results for %d queries", len(out), queries)
	}
	seen := map[int]bool{}
	for _, row := range out {
		clear(seen)
		for _, j := range row {
			if j.Segment < 0 || j.Segment >= len(segments) {
				return fmt.Errorf("policy: judging matcher returned segment %d of %d", j.Segment, len(segments))
			}
			if seen[j.Segment] {
				return fmt.Errorf("policy: judging matcher returned segment %d twice for one query", j.Segment)
			}
			seen[j.Segment] = true
			if math.IsNaN(j.Score) {
				return errors.New("policy: judging matcher returned a NaN score")
			}
			switch j.Verdict {
			case VerdictJudge:
				if !strings.Contains(segments[j.Segment], j.Quote) {
					return fmt.Errorf("policy: judging matcher returned a quote that is not in segment %d", j.Segment)
				}
			case VerdictUnexamined, VerdictNoAnswer, VerdictInjection:
			default:
				return fmt.Errorf("policy: judging matcher returned verdict %q", j.Verdict)
			}
		}
	}
	return nil
}

// checkSemantic validates a SemanticMatcher's answer.
func checkSemantic(out [][]int, segments, queries int) error {
	if len(out) != queries {
		return fmt.Errorf("policy: semantic matcher returned %d results for %d queries", len(out), queries)
	}
	for _, idx := range out {
		for _, j := range idx {
			if j < 0 || j >= segments {
				return fmt.Errorf("policy: semantic matcher returned segment %d of %d", j, segments)
			}
		}
	}
	return nil
}

// localMatcher is implemented by the built-in matchers: they run on this
// process's CPU, so their time counts against the evaluation budget.
type localMatcher interface{ local() }

func (LexicalMatcher) local() {}
func (NGramMatcher) local()   {}
