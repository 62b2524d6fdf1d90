package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/policy/embeddings"
	"github.com/aiusage/kit/policy/semeval"
)

// DefaultEmbeddingsTimeout is the default of --embeddings-timeout.
const DefaultEmbeddingsTimeout = 10 * time.Second

// embeddingsFlags choose the semantic matcher of "service serve", "demo"
// and "policy eval": the embeddings endpoint at --embeddings-url, or the
// built-in matcher when it is not set.
type embeddingsFlags struct {
	url, model, apiKey, auth string
	threshold                float64
	timeout                  time.Duration
	// budget is --evaluation-budget, of the commands that evaluate tasks
	// (registerBudget).
	budget time.Duration
}

// registerBudget adds --evaluation-budget, the time budget of one
// evaluation, to "service serve" and "demo".
func (f *embeddingsFlags) registerBudget(fs *flag.FlagSet) {
	fs.DurationVar(&f.budget, "evaluation-budget", policy.DefaultBudget, "how long the evaluation of one task may take "+
		"(Regex patterns, terms and the built-in semantic matcher; not the wait for --embeddings-url); past it the task waits for a person, "+
		"with decision reason budget")
}

// checkBudget refuses an --evaluation-budget that is not positive.
func (f *embeddingsFlags) checkBudget(cmd string) error {
	if f.budget <= 0 {
		return usagef("%s: --evaluation-budget must be positive, got %s", cmd, f.budget)
	}
	return nil
}

func (f *embeddingsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "embeddings-url", "", "evaluate Semantic instructions with the OpenAI-compatible embeddings endpoint at `URL` "+
		"(the full path, e.g. http://localhost:11434/v1/embeddings) instead of the built-in matcher")
	fs.StringVar(&f.model, "embeddings-model", "", "the embeddings `MODEL` sent with each request (needs --embeddings-url)")
	fs.StringVar(&f.apiKey, "embeddings-api-key", "", "the `KEY` sent to the embeddings endpoint; prefer the environment variable, "+
		"which other users cannot see")
	fs.StringVar(&f.auth, "embeddings-auth", "auto", "how the key is sent: bearer (Authorization: Bearer KEY), api-key (api-key: KEY, "+
		"for Azure OpenAI) or auto (api-key for hosts under .openai.azure.com or .cognitiveservices.azure.com, else bearer)")
	fs.Float64Var(&f.threshold, "embeddings-threshold", embeddings.DefaultThreshold, "the cosine similarity in (0, 1] at which a "+
		"sentence matches an instruction's text (needs --embeddings-url; tune it per model with 'aiusage policy eval')")
	fs.DurationVar(&f.timeout, "embeddings-timeout", DefaultEmbeddingsTimeout, "how long one request to the embeddings endpoint may take; "+
		"past it the evaluation fails and the task stays pending, evaluated again later")
}

// matcher returns the matcher the flags choose and the attributes that
// describe it for the log. A bad flag is a usage error naming it.
func (f *embeddingsFlags) matcher(cmd string) (policy.SemanticScorer, []slog.Attr, error) {
	if f.url == "" {
		if f.model != "" {
			return nil, nil, usagef("%s: --embeddings-model needs --embeddings-url", cmd)
		}
		if f.threshold != embeddings.DefaultThreshold {
			return nil, nil, usagef("%s: --embeddings-threshold needs --embeddings-url", cmd)
		}
		return policy.LexicalMatcher{}, []slog.Attr{slog.String("semantic_matcher", "builtin"),
			slog.Float64("semantic_threshold", policy.DefaultLexicalThreshold)}, nil
	}
	u, err := url.Parse(f.url)
	switch {
	case err != nil:
		return nil, nil, usagef("%s: --embeddings-url: %v", cmd, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, nil, usagef("%s: --embeddings-url must be an http or https URL, got %q", cmd, f.url)
	case u.Host == "":
		return nil, nil, usagef("%s: --embeddings-url has no host: %q", cmd, f.url)
	case u.User != nil:
		return nil, nil, usagef("%s: --embeddings-url must not hold credentials; set AIUSAGE_EMBEDDINGS_API_KEY", cmd)
	}
	if math.IsNaN(f.threshold) || f.threshold <= 0 || f.threshold > 1 {
		return nil, nil, usagef("%s: --embeddings-threshold must be in (0, 1], got %v", cmd, f.threshold)
	}
	if f.timeout <= 0 {
		return nil, nil, usagef("%s: --embeddings-timeout must be positive, got %s", cmd, f.timeout)
	}
	header := ""
	switch f.auth {
	case "bearer":
	case "api-key":
		header = "api-key"
	case "auto":
		host := strings.ToLower(u.Hostname())
		if strings.HasSuffix(host, ".openai.azure.com") || strings.HasSuffix(host, ".cognitiveservices.azure.com") {
			header = "api-key"
		}
	default:
		return nil, nil, usagef("%s: --embeddings-auth must be bearer, api-key or auto, got %q", cmd, f.auth)
	}
	c := &embeddings.Client{URL: f.url, Model: f.model, APIKey: f.apiKey, APIKeyHeader: header,
		HTTPClient: &http.Client{Timeout: f.timeout}, Threshold: f.threshold}
	auth := "none"
	switch {
	case f.apiKey != "" && header != "":
		auth = header + " header"
	case f.apiKey != "":
		auth = "bearer"
	}
	return c, []slog.Attr{slog.String("semantic_matcher", "embeddings"), slog.String("embeddings_url", u.Redacted()),
		slog.String("embeddings_model", f.model), slog.Float64("semantic_threshold", f.threshold),
		slog.Duration("embeddings_timeout", f.timeout), slog.String("embeddings_auth", auth)}, nil
}

func policyCommand() *command {
	return &command{
		name:    "policy",
		summary: "work on how requests are evaluated against instructions",
		subs:    []*command{policyEvalCommand()},
	}
}

// policyEvalFlags are the flags of "policy eval".
type policyEvalFlags struct {
	embeddingsFlags
	judge                          judgeFlags
	set, split, thresholds, format string
	maxFPR                         float64
	// judgeMaxPairs is --judge-max-pairs.
	judgeMaxPairs int
}

func policyEvalCommand() *command {
	f := &policyEvalFlags{}
	return &command{
		name:    "eval",
		summary: "measure the semantic matchers on a labelled set of instruction texts and messages",
		long: `Scores every pair of a labelled evaluation set (the kit's own by default,
400 pairs in English, German, French and Spanish; or the JSON Lines file
--set) with each semantic matcher: the built-in one, and the embeddings
endpoint when --embeddings-url is given (with the same flags and
AIUSAGE_EMBEDDINGS_API_KEY as 'service serve'). A message's score is that of
its most similar sentence, as the service evaluates it.

For each matcher and each threshold of the sweep (--thresholds), it reports
the pairs predicted (TP, FP, FN, TN), precision, recall, F1, the
false-positive rate (FPR: the share of the pairs labelled no match that are
flagged) and Youden's J (recall - FPR: 0 for a matcher no better than
flagging everything) on the half of the set --split names: tune, holdout, or
all (each separately). Then, per matcher, the same figures per kind of pair
(exact, paraphrase, synonym, language, negation, near-miss, unrelated) on the
held-out half at the threshold the matcher is used at, and for the built-in
matcher at its high sensitivity too.

It then chooses two thresholds on the tuning half, among those of the sweep
and every hundredth between its lowest and highest: the operating point, of
highest recall whose FPR is at most --max-fpr, and the one of best F1; and
reports what each gives on the held-out half: the figures to trust, the pairs
it was not chosen on. F1 rewards flagging nearly everything on a set that is
half matches; the operating point bounds the false alarms.

With --judge-url (and the other --judge-* flags of 'service serve',
AIUSAGE_JUDGE_API_KEY), it also measures the model judge as the service
uses it: each pair's message, cut into sentences, goes through the cascade
(the candidates picked by the matcher the service would use, at most
--judge-max-calls judge calls a pair); a pair is a match when any sentence
is. It reports the same figures for the first --judge-max-pairs pairs of the
halves --split names, per kind on the held-out half, then the judge calls,
their failures and unusable answers, cache hits, the matches by verdict, and
the latency of a call and of a pair (mean, median, 95th percentile,
maximum). Pairs whose judging failed are counted and left out; the run fails
when every judge call did.

The set's format, how the kit's set was made and labelled, and how it is
split are described in docs/policy.md.

Output: a text table, or with --format json one JSON object. Exit status: 0,
1 when a matcher fails (the embeddings endpoint unreachable), 2 for a bad
command line or a set that does not parse.`,
		flags: func(fs *flag.FlagSet) {
			f.register(fs)
			fs.StringVar(&f.set, "set", "", "the evaluation set, a JSON Lines `FILE` (default: the kit's own)")
			fs.StringVar(&f.split, "split", "all", "the half to report: tune, holdout or all (both, each separately)")
			fs.StringVar(&f.thresholds, "thresholds", "0.05:0.95:0.05", "the thresholds to try: FROM:TO:STEP, or a comma-separated `LIST`")
			fs.Float64Var(&f.maxFPR, "max-fpr", semeval.DefaultMaxFPR, "the bound in [0, 1] on the false-positive rate on the tuning half "+
				"under which the operating point is chosen")
			fs.StringVar(&f.format, "format", "text", "output format: text or json")
			f.judge.register(fs)
			fs.IntVar(&f.judgeMaxPairs, "judge-max-pairs", 400, "the most pairs the judge of --judge-url is measured on, the first "+
				"of the halves --split names (0: all)")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			return policyEval(ctx, e, f)
		},
	}
}

// parseThresholds reads FROM:TO:STEP or a comma-separated list, each value
// in (0, 1].
func parseThresholds(s string) ([]float64, error) {
	var out []float64
	if parts := strings.Split(s, ":"); len(parts) == 3 {
		var v [3]float64
		for i, p := range parts {
			x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil {
				return nil, fmt.Errorf("%q is not a number", p)
			}
			v[i] = x
		}
		if v[2] <= 0 || v[1] < v[0] {
			return nil, fmt.Errorf("%q: STEP must be positive and TO at least FROM", s)
		}
		if (v[1]-v[0])/v[2] > 1000 {
			return nil, fmt.Errorf("%q: more than 1000 thresholds", s)
		}
		// Counted in steps, so that 0.05 steps do not drift.
		for i := 0; ; i++ {
			x := math.Round((v[0]+float64(i)*v[2])*1e9) / 1e9
			if x > v[1]+1e-9 {
				break
			}
			out = append(out, x)
		}
	} else {
		for _, p := range strings.Split(s, ",") {
			x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil {
				return nil, fmt.Errorf("%q is not a number", p)
			}
			out = append(out, x)
		}
	}
	for _, x := range out {
		if math.IsNaN(x) || x <= 0 || x > 1 {
			return nil, fmt.Errorf("threshold %v is not in (0, 1]", x)
		}
	}
	return out, nil
}

// choiceGrid returns the thresholds a threshold is chosen among: those of
// the sweep and every hundredth between its lowest and highest, in order,
// without repeats.
func choiceGrid(sweep []float64) []float64 {
	lo, hi := slices.Min(sweep), slices.Max(sweep)
	grid := slices.Clone(sweep)
	for i := int(math.Ceil(lo*100 - 1e-9)); float64(i)/100 <= hi+1e-9; i++ {
		grid = append(grid, float64(i)/100)
	}
	slices.Sort(grid)
	return slices.CompactFunc(grid, func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })
}

// evalReport is the JSON output of "policy eval".
type evalReport struct {
	Set   string `json:"set"`
	Pairs int    `json:"pairs"`
	// MaxFPR is --max-fpr.
	MaxFPR   float64       `json:"maxFpr"`
	Matchers []evalMatcher `json:"matchers"`
	// Judge is the measure of the cascade of --judge-url, when given.
	Judge *evalJudgeReport `json:"judge,omitempty"`
}

type evalMatcher struct {
	Name string `json:"name"`
	// DefaultThreshold is the threshold the matcher is used at (the
	// standard sensitivity); RecallThreshold that of the high sensitivity,
	// when the matcher has one of its own (policy.SensitiveScorer).
	DefaultThreshold float64     `json:"defaultThreshold"`
	RecallThreshold  float64     `json:"recallThreshold,omitempty"`
	Splits           []evalSplit `json:"splits"`
	// Kinds are the figures per kind of pair on the held-out half at
	// DefaultThreshold and, when set, RecallThreshold.
	Kinds []evalKinds `json:"kinds"`
	// OperatingPoint is the threshold of highest recall whose FPR on the
	// tuning half is at most the report's MaxFPR, and its figures; absent
	// when no threshold keeps within the bound.
	OperatingPoint *semeval.OperatingPoint `json:"operatingPoint,omitempty"`
	// BestOnTune is the metrics of the threshold of best F1 on the tuning
	// half; HoldoutAtBest those of that threshold on the held-out half.
	BestOnTune    semeval.Metrics `json:"bestOnTune"`
	HoldoutAtBest semeval.Metrics `json:"holdoutAtBest"`
}

type evalSplit struct {
	Split   string            `json:"split"`
	Pairs   int               `json:"pairs"`
	Metrics []semeval.Metrics `json:"metrics"`
}

// evalKinds are the figures of one threshold on the held-out half, per kind
// of pair and in all.
type evalKinds struct {
	// Sensitivity is what the threshold is: standard (the matcher's
	// default) or high (its recall threshold).
	Sensitivity string                `json:"sensitivity"`
	All         semeval.Metrics       `json:"all"`
	Kinds       []semeval.KindMetrics `json:"kinds"`
}

// evalScorer is one matcher "policy eval" measures, under its name in the
// report.
type evalScorer struct {
	name   string
	scorer policy.SemanticScorer
}

// evalScorers returns the matchers the flags ask to measure, in the order
// of the report: the built-in ones, then the embeddings endpoint when
// --embeddings-url is set. A bad flag is a usage error naming it.
func evalScorers(e *env, f *policyEvalFlags) ([]evalScorer, error) {
	out := []evalScorer{{"builtin", policy.LexicalMatcher{}}, {"builtin-ngram", policy.NGramMatcher{}}}
	m, _, err := f.matcher(e.cmd)
	if err != nil {
		return nil, err
	}
	if f.url != "" {
		out = append(out, evalScorer{"embeddings", m})
	}
	return out, nil
}

func policyEval(ctx context.Context, e *env, f *policyEvalFlags) error {
	if f.format != "text" && f.format != "json" {
		return usagef("%s: --format must be text or json, got %q", e.cmd, f.format)
	}
	var splits []string
	switch f.split {
	case semeval.SplitTune, semeval.SplitHoldout:
		splits = []string{f.split}
	case "all":
		splits = []string{semeval.SplitTune, semeval.SplitHoldout}
	default:
		return usagef("%s: --split must be tune, holdout or all, got %q", e.cmd, f.split)
	}
	thresholds, err := parseThresholds(f.thresholds)
	if err != nil {
		return usagef("%s: --thresholds: %v", e.cmd, err)
	}
	if math.IsNaN(f.maxFPR) || f.maxFPR < 0 || f.maxFPR > 1 {
		return usagef("%s: --max-fpr must be in [0, 1], got %v", e.cmd, f.maxFPR)
	}
	matchers, err := evalScorers(e, f)
	if err != nil {
		return err
	}
	if f.judgeMaxPairs < 0 {
		return usagef("%s: --judge-max-pairs must not be negative, got %d", e.cmd, f.judgeMaxPairs)
	}
	if f.judge.url == "" && len(f.judge.given([]string{"judge-max-pairs"})) > 0 {
		return usagef("%s: --judge-max-pairs needs --judge-url", e.cmd)
	}
	// The judge's candidates, as the service picks them: the embeddings
	// endpoint when --embeddings-url is set, else the built-in matcher.
	candidates := matchers[0]
	if f.url != "" {
		candidates = matchers[len(matchers)-1]
	}
	_, cascade, _, err := f.judge.cascade(e.cmd, candidates.scorer)
	if err != nil {
		return err
	}
	setName := "builtin"
	var pairs []semeval.Pair
	if f.set == "" {
		pairs, err = semeval.Default()
	} else {
		setName = f.set
		var file *os.File
		if file, err = os.Open(f.set); err != nil {
			return usagef("%s: --set: %v", e.cmd, err)
		}
		pairs, err = semeval.Read(file)
		_ = file.Close()
	}
	if err != nil {
		return usagef("%s: --set %s: %v", e.cmd, setName, err)
	}
	rep := evalReport{Set: setName, Pairs: len(pairs), MaxFPR: f.maxFPR}
	grid := choiceGrid(thresholds)
	for _, m := range matchers {
		scores, err := semeval.Scores(ctx, m.scorer, pairs)
		if err != nil {
			return fmt.Errorf("%s: matcher %s: %w", e.cmd, m.name, err)
		}
		rep.Matchers = append(rep.Matchers, measureMatcher(m, pairs, scores, splits, thresholds, grid, f.maxFPR))
	}
	if cascade != nil {
		j, err := evalJudge(ctx, cascade, candidates.name, pairs, splits, f.judgeMaxPairs)
		if err != nil {
			return fmt.Errorf("%s: judge: %w", e.cmd, err)
		}
		rep.Judge = &j
	}
	if f.format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	if err := writeEvalText(e.stdout, rep); err != nil {
		return err
	}
	if rep.Judge != nil {
		return writeJudgeText(e.stdout, rep.Judge)
	}
	return nil
}

// measureMatcher computes the report of one matcher from its scores.
func measureMatcher(m evalScorer, pairs []semeval.Pair, scores []float64, splits []string, thresholds, grid []float64,
	maxFPR float64) evalMatcher {
	em := evalMatcher{Name: m.name, DefaultThreshold: m.scorer.MatchThreshold()}
	if s, ok := m.scorer.(policy.SensitiveScorer); ok {
		em.RecallThreshold = s.RecallThreshold()
	}
	for _, split := range splits {
		ps, sc := semeval.Half(pairs, scores, split)
		em.Splits = append(em.Splits, evalSplit{Split: split, Pairs: len(ps), Metrics: semeval.Sweep(ps, sc, thresholds)})
	}
	hold, holdScores := semeval.Half(pairs, scores, semeval.SplitHoldout)
	perKind := func(sensitivity string, th float64) evalKinds {
		return evalKinds{Sensitivity: sensitivity, All: semeval.Measure(hold, holdScores, th),
			Kinds: semeval.MeasureKinds(hold, holdScores, th)}
	}
	em.Kinds = append(em.Kinds, perKind("standard", em.DefaultThreshold))
	if em.RecallThreshold > 0 {
		em.Kinds = append(em.Kinds, perKind("high", em.RecallThreshold))
	}
	if op, ok := semeval.ChooseOperatingPoint(pairs, scores, grid, maxFPR); ok {
		em.OperatingPoint = &op
	}
	tune, tuneScores := semeval.Half(pairs, scores, semeval.SplitTune)
	sweep := semeval.Sweep(tune, tuneScores, grid)
	em.BestOnTune = sweep[semeval.Best(sweep)]
	em.HoldoutAtBest = semeval.Measure(hold, holdScores, em.BestOnTune.Threshold)
	return em
}

func writeEvalText(w io.Writer, rep evalReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "set %s: %d pairs\n", rep.Set, rep.Pairs)
	const header = "TP\tFP\tFN\tTN\tprecision\trecall\tFPR\tJ\tF1\t"
	row := func(x semeval.Metrics) string {
		return fmt.Sprintf("%d\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t", x.TP, x.FP, x.FN, x.TN, x.Precision, x.Recall, x.FPR, x.J, x.F1)
	}
	for _, m := range rep.Matchers {
		for _, s := range m.Splits {
			fmt.Fprintf(w, "\nmatcher %s (used at %.2f), %s half: %d pairs\n", m.Name, m.DefaultThreshold, s.Split, s.Pairs)
			fmt.Fprintln(tw, "threshold\t"+header)
			for _, x := range s.Metrics {
				fmt.Fprintf(tw, "%.2f\t%s\n", x.Threshold, row(x))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		for _, k := range m.Kinds {
			fmt.Fprintf(w, "\nmatcher %s per kind, holdout half, at %.2f (%s sensitivity)\n", m.Name, k.All.Threshold, k.Sensitivity)
			fmt.Fprintln(tw, "kind\t"+header)
			for _, x := range k.Kinds {
				fmt.Fprintf(tw, "%s\t%s\n", x.Kind, row(x.Metrics))
			}
			fmt.Fprintf(tw, "all\t%s\n", row(k.All))
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(w, "\nthresholds chosen on the tuning half, and what they give on the held-out half\n"+
		"(operating point: highest recall with a false-positive rate of at most %.2f on the tuning half):\n", rep.MaxFPR)
	fmt.Fprintln(tw, "matcher\tchosen for\tthreshold\ttune FPR\ttune F1\tholdout precision\trecall\tFPR\tJ\tF1\t")
	for _, m := range rep.Matchers {
		if op := m.OperatingPoint; op != nil {
			fmt.Fprintf(tw, "%s\tFPR <= %.2f\t%.2f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", m.Name, rep.MaxFPR, op.Tune.Threshold,
				op.Tune.FPR, op.Tune.F1, op.Holdout.Precision, op.Holdout.Recall, op.Holdout.FPR, op.Holdout.J, op.Holdout.F1)
		} else {
			fmt.Fprintf(tw, "%s\tFPR <= %.2f\tnone\t\t\t\t\t\t\t\t\n", m.Name, rep.MaxFPR)
		}
		b, h := m.BestOnTune, m.HoldoutAtBest
		fmt.Fprintf(tw, "%s\tbest F1\t%.2f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", m.Name, b.Threshold, b.FPR, b.F1,
			h.Precision, h.Recall, h.FPR, h.J, h.F1)
	}
	return tw.Flush()
}
