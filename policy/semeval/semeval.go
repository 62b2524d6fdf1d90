// Package semeval measures how well a [policy.SemanticScorer] tells which
// messages a Semantic instruction is about, on a labelled set of (instruction
// text, message, match or not) pairs. The set of the kit is embedded
// ([Default]; see README.md beside it for how it was made and labelled); "aiusage
// policy eval" runs it.
//
// A pair's score is that of the message's most similar segment
// ([policy.Segments]), as [policy.Set.Evaluate] would see it, so a message
// matches at a threshold exactly when its instruction would match one of its
// sentences. Each pair belongs to one of two halves, chosen by a hash of its
// texts ([Pair.Split]): the tuning half, on which a threshold is chosen, and
// the held-out half, which tells how that threshold does on pairs it was not
// chosen on.
package semeval

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"strings"

	"github.com/aiusage/kit/policy"
)

// Halves of the set, the values of [Pair.Split].
const (
	SplitTune    = "tune"
	SplitHoldout = "holdout"
)

// Kinds of pairs: what a pair tests.
var Kinds = []string{"exact", "paraphrase", "synonym", "language", "negation", "near-miss", "unrelated"}

// Pair is one labelled example: whether Message is about what Instruction
// (the text of a Semantic trigger) describes.
type Pair struct {
	Instruction string `json:"instruction"`
	Message     string `json:"message"`
	Match       bool   `json:"match"`
	// Kind is what the pair tests, one of Kinds.
	Kind string `json:"kind"`
	// Lang is the language of Message, an ISO 639-1 code (en, de, fr, es).
	Lang string `json:"lang"`
}

// Split returns the half the pair belongs to: SplitTune when the 64-bit
// FNV-1a hash of its instruction, a line feed and its message is even,
// SplitHoldout when odd. It depends on the texts alone, so a pair stays in
// its half whatever is added to the set or in which order.
func (p Pair) Split() string {
	h := fnv.New64a()
	_, _ = io.WriteString(h, p.Instruction+"\n"+p.Message)
	if h.Sum64()%2 == 0 {
		return SplitTune
	}
	return SplitHoldout
}

//go:embed semantic-eval.jsonl
var defaultSet []byte

// Default returns the pairs of the kit's evaluation set,
// semantic-eval.jsonl.
func Default() ([]Pair, error) {
	return Read(bytes.NewReader(defaultSet))
}

// MaxLine is the longest line Read accepts, in bytes.
const MaxLine = 1 << 20

// Read reads a set in JSON Lines: one JSON object per line with the fields
// of [Pair], all required ("match" true or false), no other field; blank
// lines are skipped. An error names the line and what is wrong with it.
func Read(r io.Reader) ([]Pair, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	var out []Pair
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		p, err := parsePair(line)
		if err != nil {
			return nil, fmt.Errorf("semeval: line %d: %w", n, err)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("semeval: a line is longer than %d bytes", MaxLine)
		}
		return nil, fmt.Errorf("semeval: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("semeval: the set holds no pair")
	}
	return out, nil
}

func parsePair(line []byte) (Pair, error) {
	var raw struct {
		Pair
		Match *bool `json:"match"`
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Pair{}, err
	}
	if dec.More() {
		return Pair{}, errors.New("more than one JSON value")
	}
	p := raw.Pair
	switch {
	case strings.TrimSpace(p.Instruction) == "":
		return Pair{}, errors.New(`"instruction" is missing or blank`)
	case strings.TrimSpace(p.Message) == "":
		return Pair{}, errors.New(`"message" is missing or blank`)
	case raw.Match == nil:
		return Pair{}, errors.New(`"match" is missing`)
	case p.Lang == "":
		return Pair{}, errors.New(`"lang" is missing`)
	}
	known := false
	for _, k := range Kinds {
		known = known || p.Kind == k
	}
	if !known {
		return Pair{}, fmt.Errorf(`"kind" %q is not one of %s`, p.Kind, strings.Join(Kinds, ", "))
	}
	p.Match = *raw.Match
	return p, nil
}

// Filter returns the pairs of split: SplitTune, SplitHoldout, or "all" for
// every pair.
func Filter(pairs []Pair, split string) []Pair {
	if split == "all" {
		return pairs
	}
	var out []Pair
	for _, p := range pairs {
		if p.Split() == split {
			out = append(out, p)
		}
	}
	return out
}

// Scores returns the score of each pair: the highest score the scorer gives
// a segment of its message for its instruction (0 for a message without
// segments). It asks the scorer once per distinct instruction.
func Scores(ctx context.Context, s policy.SemanticScorer, pairs []Pair) ([]float64, error) {
	out := make([]float64, len(pairs))
	byInstruction := map[string][]int{}
	var order []string
	for i, p := range pairs {
		if _, ok := byInstruction[p.Instruction]; !ok {
			order = append(order, p.Instruction)
		}
		byInstruction[p.Instruction] = append(byInstruction[p.Instruction], i)
	}
	for _, q := range order {
		var segs []string
		var owner []int // pair index of each segment
		for _, i := range byInstruction[q] {
			for _, sg := range policy.Segments(pairs[i].Message) {
				segs = append(segs, sg)
				owner = append(owner, i)
			}
		}
		if len(segs) == 0 {
			continue
		}
		scores, err := s.Scores(ctx, segs, []string{q})
		if err != nil {
			return nil, err
		}
		if len(scores) != 1 || len(scores[0]) != len(segs) {
			return nil, fmt.Errorf("semeval: the scorer returned %d results for 1 query", len(scores))
		}
		for _, i := range byInstruction[q] {
			out[i] = math.Inf(-1)
		}
		for j, sc := range scores[0] {
			if math.IsNaN(sc) {
				return nil, errors.New("semeval: the scorer returned NaN")
			}
			out[owner[j]] = max(out[owner[j]], sc)
		}
		for _, i := range byInstruction[q] {
			if math.IsInf(out[i], -1) {
				out[i] = 0
			}
		}
	}
	return out, nil
}

// Metrics are the figures of one threshold on a set of pairs.
type Metrics struct {
	Threshold float64 `json:"threshold"`
	// Pairs counted: true positives (labelled match, scored at or above
	// the threshold), false positives, false negatives, true negatives.
	TP int `json:"tp"`
	FP int `json:"fp"`
	FN int `json:"fn"`
	TN int `json:"tn"`
	// Precision is TP / (TP + FP), 0 when nothing scored at the threshold.
	Precision float64 `json:"precision"`
	// Recall is TP / (TP + FN), 0 when no pair is labelled match.
	Recall float64 `json:"recall"`
	// F1 is the harmonic mean of Precision and Recall, 0 when both are 0.
	F1 float64 `json:"f1"`
	// FPR, the false-positive rate, is FP / (FP + TN): the share of the
	// pairs labelled no match that are predicted a match; 0 when no pair is
	// labelled no match.
	FPR float64 `json:"fpr"`
	// J is Youden's J statistic, Recall - FPR: 0 for a matcher no better
	// than chance (or than flagging everything), 1 for a perfect one. Unlike
	// F1 it does not reward flagging everything on a set that is half
	// matches.
	J float64 `json:"j"`
}

// Measure counts the pairs at threshold: a pair is predicted a match when
// its score is at least threshold. scores and pairs are parallel.
func Measure(pairs []Pair, scores []float64, threshold float64) Metrics {
	m := Metrics{Threshold: threshold}
	for i, p := range pairs {
		predicted := scores[i] >= threshold
		switch {
		case p.Match && predicted:
			m.TP++
		case predicted:
			m.FP++
		case p.Match:
			m.FN++
		default:
			m.TN++
		}
	}
	if m.TP+m.FP > 0 {
		m.Precision = float64(m.TP) / float64(m.TP+m.FP)
	}
	if m.TP+m.FN > 0 {
		m.Recall = float64(m.TP) / float64(m.TP+m.FN)
	}
	if m.Precision+m.Recall > 0 {
		m.F1 = 2 * m.Precision * m.Recall / (m.Precision + m.Recall)
	}
	if m.FP+m.TN > 0 {
		m.FPR = float64(m.FP) / float64(m.FP+m.TN)
	}
	m.J = m.Recall - m.FPR
	return m
}

// Sweep measures each threshold, in order.
func Sweep(pairs []Pair, scores []float64, thresholds []float64) []Metrics {
	out := make([]Metrics, len(thresholds))
	for i, t := range thresholds {
		out[i] = Measure(pairs, scores, t)
	}
	return out
}

// Best returns the index of the metrics of highest F1, the lowest threshold
// among equals; -1 when ms is empty.
func Best(ms []Metrics) int {
	best := -1
	for i, m := range ms {
		if best < 0 || m.F1 > ms[best].F1 || m.F1 == ms[best].F1 && m.Threshold < ms[best].Threshold {
			best = i
		}
	}
	return best
}

// Half returns the pairs of split (SplitTune or SplitHoldout, or "all") and
// their scores, in order. scores and pairs are parallel.
func Half(pairs []Pair, scores []float64, split string) ([]Pair, []float64) {
	if split == "all" {
		return pairs, scores
	}
	var ps []Pair
	var sc []float64
	for i, p := range pairs {
		if p.Split() == split {
			ps, sc = append(ps, p), append(sc, scores[i])
		}
	}
	return ps, sc
}

// KindMetrics are the figures of one threshold on the pairs of one kind.
// A kind whose pairs are all labelled match (exact, paraphrase, synonym,
// language) has no false positive to count, so its FPR is 0 and its J its
// recall; one whose pairs are all labelled no match (near-miss, unrelated)
// has no recall, so its J is minus its FPR: read the recall of the first
// and the FPR of the second.
type KindMetrics struct {
	Kind string `json:"kind"`
	Metrics
}

// MeasureKinds measures threshold on the pairs of each kind, in the order
// of Kinds, leaving out the kinds without a pair. scores and pairs are
// parallel.
func MeasureKinds(pairs []Pair, scores []float64, threshold float64) []KindMetrics {
	var out []KindMetrics
	for _, k := range Kinds {
		var ps []Pair
		var sc []float64
		for i, p := range pairs {
			if p.Kind == k {
				ps, sc = append(ps, p), append(sc, scores[i])
			}
		}
		if len(ps) > 0 {
			out = append(out, KindMetrics{Kind: k, Metrics: Measure(ps, sc, threshold)})
		}
	}
	return out
}

// DefaultMaxFPR is the default bound on the false-positive rate of an
// operating point: at most 10% of the pairs labelled no match flagged.
const DefaultMaxFPR = 0.10

// WithinFPR returns the index of the metrics of highest recall among those
// whose FPR is at most maxFPR, the lowest FPR and then the lowest threshold
// among equals; -1 when none is within the bound.
func WithinFPR(ms []Metrics, maxFPR float64) int {
	best := -1
	for i, m := range ms {
		if m.FPR > maxFPR {
			continue
		}
		if best < 0 || m.Recall > ms[best].Recall ||
			m.Recall == ms[best].Recall && (m.FPR < ms[best].FPR || m.FPR == ms[best].FPR && m.Threshold < ms[best].Threshold) {
			best = i
		}
	}
	return best
}

// OperatingPoint is a threshold chosen on the tuning half of a set under a
// bound on false positives, and what it gives on the held-out half.
type OperatingPoint struct {
	// MaxFPR is the bound on the tuning half's false-positive rate the
	// threshold was chosen under.
	MaxFPR float64 `json:"maxFpr"`
	// Tune are the figures of the chosen threshold (Tune.Threshold) on the
	// tuning half: of the thresholds tried, the one of highest recall whose
	// FPR there is at most MaxFPR (WithinFPR).
	Tune Metrics `json:"tune"`
	// Holdout are its figures on the held-out half: the ones to trust.
	Holdout Metrics `json:"holdout"`
	// HoldoutKinds are its figures on the held-out half, per kind.
	HoldoutKinds []KindMetrics `json:"holdoutKinds"`
}

// ChooseOperatingPoint chooses, of thresholds, the one of highest recall
// whose false-positive rate on the tuning half of pairs is at most maxFPR,
// and measures it on the held-out half. It reports false when no threshold
// keeps within the bound (try higher thresholds). scores and pairs are
// parallel.
func ChooseOperatingPoint(pairs []Pair, scores []float64, thresholds []float64, maxFPR float64) (OperatingPoint, bool) {
	tune, tuneScores := Half(pairs, scores, SplitTune)
	sweep := Sweep(tune, tuneScores, thresholds)
	i := WithinFPR(sweep, maxFPR)
	if i < 0 {
		return OperatingPoint{MaxFPR: maxFPR}, false
	}
	hold, holdScores := Half(pairs, scores, SplitHoldout)
	th := sweep[i].Threshold
	return OperatingPoint{MaxFPR: maxFPR, Tune: sweep[i], Holdout: Measure(hold, holdScores, th),
		HoldoutKinds: MeasureKinds(hold, holdScores, th)}, true
}

// BestRecall returns the index of the metrics of highest threshold whose
// recall is at least minRecall (the threshold that keeps that recall with
// the fewest false positives); -1 when none reaches it.
func BestRecall(ms []Metrics, minRecall float64) int {
	best := -1
	for i, m := range ms {
		if m.Recall >= minRecall && (best < 0 || m.Threshold > ms[best].Threshold) {
			best = i
		}
	}
	return best
}
