package cli

import (
	"flag"
	"log/slog"
	"math"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/policy/judge"
)

// Bounds of the judge's flags.
const (
	// DefaultJudgeTimeout is the default of --judge-timeout.
	DefaultJudgeTimeout = 30 * time.Second
	// maxJudgeCalls bounds --judge-max-calls.
	maxJudgeCalls = 1000
)

// judgeFlags configure the model judge of "service serve", "demo" and
// "policy eval": an OpenAI-compatible chat completions endpoint that decides
// the candidate sentences the cheap matcher picks (judge.Cascade).
type judgeFlags struct {
	url, model, apiKey, auth string
	timeout                  time.Duration
	maxCalls                 int
	threshold                float64
	// fs is the flag set registered into, to tell which flags were given.
	fs *flag.FlagSet
}

// judgeOnlyFlags are the flags that mean nothing without --judge-url.
// --judge-api-key is not among them: its environment variable may be set
// for every command.
var judgeOnlyFlags = []string{"judge-model", "judge-auth", "judge-timeout", "judge-max-calls", "judge-candidate-threshold"}

func (f *judgeFlags) register(fs *flag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.url, "judge-url", "", "decide Semantic instructions with a model judge: the OpenAI-compatible chat completions endpoint at `URL` "+
		"(the full path, e.g. http://localhost:11434/v1/chat/completions), asked about the sentences the semantic matcher picks "+
		"(--embeddings-url, else the built-in one)")
	fs.StringVar(&f.model, "judge-model", "", "the chat `MODEL` sent with each request to the judge (needs --judge-url)")
	fs.StringVar(&f.apiKey, "judge-api-key", "", "the `KEY` sent to the judge; prefer the environment variable, which other users cannot see")
	fs.StringVar(&f.auth, "judge-auth", "auto", "how the judge's key is sent: bearer (Authorization: Bearer KEY), api-key (api-key: KEY, "+
		"for Azure OpenAI) or auto (api-key for hosts under .openai.azure.com or .cognitiveservices.azure.com, else bearer)")
	fs.DurationVar(&f.timeout, "judge-timeout", DefaultJudgeTimeout, "how long one request to the judge may take; "+
		"past it the evaluation fails and the task stays pending, evaluated again later")
	fs.IntVar(&f.maxCalls, "judge-max-calls", judge.DefaultMaxCalls, "the most sentences of one request the judge is asked about; "+
		"the candidates beyond them are matches, for a person to see (verdict unexamined)")
	fs.Float64Var(&f.threshold, "judge-candidate-threshold", 0, "the score in (0, 1] of the semantic matcher at which a sentence is a "+
		"candidate for the judge (default: the matcher's high-recall threshold)")
}

// given returns the flags of names that were set, on the command line or
// from the environment, sorted.
func (f *judgeFlags) given(names []string) []string {
	var out []string
	if f.fs == nil {
		return nil
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	f.fs.Visit(func(fl *flag.Flag) {
		if want[fl.Name] {
			out = append(out, fl.Name)
		}
	})
	sort.Strings(out)
	return out
}

// cascade returns the semantic matcher the flags choose: candidates itself
// without --judge-url, else a judge.Cascade over candidates, with the
// attributes that describe it for the log. A bad flag is a usage error
// naming it.
func (f *judgeFlags) cascade(cmd string, candidates policy.SemanticScorer) (policy.SemanticMatcher, *judge.Cascade, []slog.Attr, error) {
	if f.url == "" {
		if g := f.given(judgeOnlyFlags); len(g) > 0 {
			return nil, nil, nil, usagef("%s: --%s needs --judge-url", cmd, g[0])
		}
		return candidates, nil, []slog.Attr{slog.Bool("judge", false)}, nil
	}
	u, err := url.Parse(f.url)
	switch {
	case err != nil:
		return nil, nil, nil, usagef("%s: --judge-url: %v", cmd, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, nil, nil, usagef("%s: --judge-url must be an http or https URL, got %q", cmd, f.url)
	case u.Host == "":
		return nil, nil, nil, usagef("%s: --judge-url has no host: %q", cmd, f.url)
	case u.User != nil:
		return nil, nil, nil, usagef("%s: --judge-url must not hold credentials; set AIUSAGE_JUDGE_API_KEY", cmd)
	}
	if f.timeout <= 0 {
		return nil, nil, nil, usagef("%s: --judge-timeout must be positive, got %s", cmd, f.timeout)
	}
	if f.maxCalls < 1 || f.maxCalls > maxJudgeCalls {
		return nil, nil, nil, usagef("%s: --judge-max-calls must be from 1 to %d, got %d", cmd, maxJudgeCalls, f.maxCalls)
	}
	if math.IsNaN(f.threshold) || f.threshold < 0 || f.threshold > 1 || (f.threshold == 0 && len(f.given([]string{"judge-candidate-threshold"})) > 0) {
		return nil, nil, nil, usagef("%s: --judge-candidate-threshold must be in (0, 1], got %v", cmd, f.threshold)
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
		return nil, nil, nil, usagef("%s: --judge-auth must be bearer, api-key or auto, got %q", cmd, f.auth)
	}
	// The cascade's default, written out for the log.
	threshold := f.threshold
	if threshold == 0 {
		threshold = candidates.MatchThreshold()
		if s, ok := candidates.(policy.SensitiveScorer); ok {
			threshold = s.RecallThreshold()
		}
	}
	c := &judge.Cascade{
		Candidates:         candidates,
		CandidateThreshold: threshold,
		MaxCalls:           f.maxCalls,
		Client:             &judge.Client{URL: f.url, Model: f.model, APIKey: f.apiKey, APIKeyHeader: header, Timeout: f.timeout},
	}
	auth := "none"
	switch {
	case f.apiKey != "" && header != "":
		auth = header + " header"
	case f.apiKey != "":
		auth = "bearer"
	}
	return c, c, []slog.Attr{slog.Bool("judge", true), slog.String("judge_url", u.Redacted()), slog.String("judge_model", f.model),
		slog.Duration("judge_timeout", f.timeout), slog.String("judge_auth", auth), slog.Int("judge_max_calls", f.maxCalls),
		slog.Float64("judge_candidate_threshold", threshold)}, nil
}
