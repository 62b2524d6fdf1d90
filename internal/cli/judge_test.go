package cli

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/judgetest"
	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/policy/semeval"
	"github.com/aiusage/kit/spec"
)

// TestJudgeFlagErrors checks the judge's flags of every command that has
// them: a usage error naming the flag, before anything starts.
func TestJudgeFlagErrors(t *testing.T) {
	t.Parallel()
	const u = "http://127.0.0.1:1/v1/chat/completions"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"scheme", []string{"--judge-url", "localhost:11434/v1/chat/completions"}, "--judge-url must be an http or https URL"},
		{"no host", []string{"--judge-url", "http:///v1/chat/completions"}, "--judge-url has no host"},
		{"credentials in the URL", []string{"--judge-url", "https://u:secret@example.com/v1/chat/completions"}, "--judge-url must not hold credentials"},
		{"zero timeout", []string{"--judge-url", u, "--judge-timeout", "0s"}, "--judge-timeout must be positive, got 0s"},
		{"negative timeout", []string{"--judge-url", u, "--judge-timeout", "-1s"}, "--judge-timeout must be positive"},
		{"zero calls", []string{"--judge-url", u, "--judge-max-calls", "0"}, "--judge-max-calls must be from 1 to 1000, got 0"},
		{"too many calls", []string{"--judge-url", u, "--judge-max-calls", "1001"}, "--judge-max-calls must be from 1 to 1000, got 1001"},
		{"threshold zero", []string{"--judge-url", u, "--judge-candidate-threshold", "0"}, "--judge-candidate-threshold must be in (0, 1], got 0"},
		{"threshold above 1", []string{"--judge-url", u, "--judge-candidate-threshold", "1.5"}, "--judge-candidate-threshold must be in (0, 1], got 1.5"},
		{"threshold NaN", []string{"--judge-url", u, "--judge-candidate-threshold", "NaN"}, "--judge-candidate-threshold must be in (0, 1]"},
		{"auth", []string{"--judge-url", u, "--judge-auth", "basic"}, "--judge-auth must be bearer, api-key or auto"},
		{"model without url", []string{"--judge-model", "qwen2.5"}, "--judge-model needs --judge-url"},
		{"calls without url", []string{"--judge-max-calls", "8"}, "--judge-max-calls needs --judge-url"},
		{"timeout without url", []string{"--judge-timeout", "30s"}, "--judge-timeout needs --judge-url"},
		{"threshold without url", []string{"--judge-candidate-threshold", "0.2"}, "--judge-candidate-threshold needs --judge-url"},
	}
	for _, cmd := range [][]string{{"service", "serve"}, {"demo"}, {"policy", "eval"}} {
		for _, tt := range tests {
			t.Run(strings.Join(cmd, " ")+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				args := append(append([]string{}, cmd...), "--database-url", "sqlite:"+filepath.Join(dir, "x.db"), "--addr", "127.0.0.1:0",
					"--access-log", filepath.Join(dir, "access.log"))
				if cmd[0] == "policy" {
					args = []string{"policy", "eval"}
				} else if cmd[0] == "service" {
					args = args[:len(args)-2]
				}
				r := runCLI(t, "", map[string]string{"AIUSAGE_JUDGE_API_KEY": "sk-judge"}, append(args, tt.args...)...)
				require.Equal(t, ExitUsage, r.code, r.stderr)
				require.Contains(t, r.stderr, strings.Join(cmd, " ")+": "+tt.want)
				require.NotContains(t, r.stderr, "secret")
				require.NotContains(t, r.stderr, "sk-judge")
			})
		}
	}
	r := runCLI(t, "", nil, "policy", "eval", "--judge-max-pairs", "10")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "policy eval: --judge-max-pairs needs --judge-url")
	r = runCLI(t, "", nil, "policy", "eval", "--judge-url", "http://127.0.0.1:1/v1/chat/completions", "--judge-max-pairs", "-1")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "policy eval: --judge-max-pairs must not be negative, got -1")
}

// TestJudgeAuthHeader checks how the judge's key is sent: bearer, or the
// api-key header of Azure OpenAI.
func TestJudgeAuthHeader(t *testing.T) {
	t.Parallel()
	tests := []struct{ url, auth, want string }{
		{"http://127.0.0.1/v1/chat/completions", "auto", "bearer"},
		{"https://acme.openai.azure.com/openai/deployments/j/chat/completions?api-version=2024-10-21", "auto", "api-key header"},
		{"https://acme.cognitiveservices.azure.com/openai/deployments/j/chat/completions", "auto", "api-key header"},
		{"https://acme.openai.azure.com/openai/deployments/j/chat/completions", "bearer", "bearer"},
		{"http://127.0.0.1/v1/chat/completions", "api-key", "api-key header"},
	}
	for _, tt := range tests {
		f := &judgeFlags{url: tt.url, auth: tt.auth, apiKey: "k", timeout: DefaultJudgeTimeout, maxCalls: 8}
		m, c, attrs, err := f.cascade("test", policy.LexicalMatcher{})
		require.NoError(t, err)
		require.Same(t, c, m)
		got := map[string]string{}
		for _, a := range attrs {
			got[a.Key] = a.Value.String()
		}
		require.Equal(t, tt.want, got["judge_auth"], tt.url)
		require.Equal(t, "true", got["judge"])
		require.Equal(t, tt.want != "bearer", c.Client.APIKeyHeader == "api-key")
		require.Equal(t, policy.LexicalMatcher{}.RecallThreshold(), c.CandidateThreshold, "the matcher's high-recall threshold by default")
	}
	m, c, attrs, err := (&judgeFlags{}).cascade("test", policy.LexicalMatcher{})
	require.NoError(t, err)
	require.Nil(t, c)
	require.Equal(t, policy.LexicalMatcher{}, m, "without --judge-url, the matcher itself")
	require.Equal(t, "judge", attrs[0].Key)
}

// oracle is a stand-in judge that knows the kit's set: it says a sentence
// matches, quoting it whole, when it is a sentence of a pair labelled match
// whose instruction the prompt holds.
func oracle(pairs []semeval.Pair) func(string) judgetest.Answer {
	return func(prompt string) judgetest.Answer {
		s := judgetest.Sentence(prompt)
		for _, p := range pairs {
			if p.Match && strings.Contains(prompt, "Instruction: "+p.Instruction+"\n") && slices.Contains(policy.Segments(p.Message), s) {
				return judgetest.Match(s)
			}
		}
		return judgetest.NoMatch()
	}
}

// TestPolicyEvalJudge measures a stand-in judge that knows the answers on
// the kit's set: its false positives are only the candidates it was not
// asked about, and the report counts its calls and their latency.
func TestPolicyEvalJudge(t *testing.T) {
	t.Parallel()
	pairs, err := semeval.Default()
	require.NoError(t, err)
	srv := judgetest.NewServer(t, oracle(pairs))
	env := map[string]string{"AIUSAGE_JUDGE_API_KEY": "sk-judge"}
	r := runCLI(t, "", env, "policy", "eval", "--judge-url", srv.URL(), "--judge-model", "oracle", "--judge-max-pairs", "120",
		"--split", "holdout", "--format", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var rep evalReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	j := rep.Judge
	require.NotNil(t, j)
	require.Equal(t, "builtin", j.Candidates)
	require.Equal(t, 120, j.Pairs)
	require.Zero(t, j.FailedPairs)
	require.Len(t, j.Splits, 1)
	x := j.Splits[0].Metrics
	require.Equal(t, semeval.SplitHoldout, j.Splits[0].Split)
	require.Equal(t, 120, x.TP+x.FP+x.FN+x.TN)
	require.Positive(t, j.Calls)
	require.Equal(t, int64(srv.Calls()), j.Calls)
	require.Equal(t, int(j.Calls), j.Latency.N, "one latency per call")
	require.Equal(t, 120, j.PerPair.N)
	require.LessOrEqual(t, j.Latency.P50, j.Latency.P95)
	require.LessOrEqual(t, j.Latency.P95, j.Latency.Max)
	require.Zero(t, j.Failures)
	require.Zero(t, j.NoAnswers, "the oracle quotes the sentence")
	require.Positive(t, j.Verdicts[policy.VerdictJudge])
	require.LessOrEqual(t, x.FP, j.Verdicts[policy.VerdictUnexamined]+j.Verdicts[policy.VerdictInjection],
		"a false positive of an oracle is a sentence it was not asked about")
	// The judge's recall is that of the candidates: what the built-in
	// matcher does not pick, no judge sees.
	require.Positive(t, x.Recall)
	for _, req := range srv.Requests() {
		require.Equal(t, "Bearer sk-judge", req.Authorization)
		require.Equal(t, "oracle", req.Model)
		require.True(t, req.Schema)
	}

	r = runCLI(t, "", nil, "policy", "eval", "--judge-url", srv.URL(), "--judge-max-pairs", "20", "--split", "tune")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "judge over matcher builtin")
	require.Contains(t, r.stdout, "judge calls")
	require.Contains(t, r.stdout, "per judge call")

	srv.Fail(http.StatusServiceUnavailable, "")
	r = runCLI(t, "", nil, "policy", "eval", "--judge-url", srv.URL(), "--judge-max-pairs", "20")
	require.Equal(t, ExitFailure, r.code, r.stdout)
	require.Contains(t, r.stderr, "policy eval: judge:")
	require.Contains(t, r.stderr, "503")
}

// TestServiceServeJudge runs "service serve" with a stand-in judge: the
// ready line names it, and a Semantic instruction's match carries the
// judge's quote and verdict.
func TestServiceServeJudge(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			srv := judgetest.NewServer(t, func(prompt string) judgetest.Answer {
				if s := judgetest.Sentence(prompt); strings.Contains(s, "buy Contoso") {
					return judgetest.Match("buy Contoso")
				}
				return judgetest.NoMatch()
			})
			dbURL := sqldbtest.URL(t, d)
			f := newFixture(t, dbURL)
			base, logs, _ := startServiceEnv(t, map[string]string{"AIUSAGE_JUDGE_API_KEY": "sk-judge"}, serviceURLText,
				"--database-url", dbURL, "--judge-url", srv.URL(), "--judge-model", "stand-in", "--judge-max-calls", "3",
				"--judge-candidate-threshold", "0.05", "--judge-timeout", "2s")
			require.Contains(t, logs.String(), "semantic_matcher=builtin")
			require.Contains(t, logs.String(), "judge=true judge_url="+srv.URL()+" judge_model=stand-in judge_timeout=2s judge_auth=bearer "+
				"judge_max_calls=3 judge_candidate_threshold=0.05")
			require.NotContains(t, logs.String(), "sk-judge")
			key := f.key.Secret
			create := map[string]any{
				"agentType": "DataProtection", "title": "Unannounced acquisitions",
				"trigger": map[string]any{"type": "Semantic", "text": "plans to buy other companies before they are announced"},
				"action":  "Block", "criticality": "High", "usedBy": []string{f.agent.ID},
			}
			status, body, _ := call(t, http.MethodPost, base+"organisations/"+f.org.ID+"/instructions", key, create)
			require.Equal(t, http.StatusCreated, status, string(body))
			submit := func(text string) spec.ReviewTask {
				status, body, _ := call(t, http.MethodPost, base+"review-tasks", key, map[string]any{"agentId": f.agent.ID,
					"request": map[string]any{"messages": []map[string]string{{"role": "user", "content": text}}}})
				require.Equal(t, http.StatusCreated, status, string(body))
				requireSchema(t, "review-task", body)
				var task spec.ReviewTask
				require.NoError(t, json.Unmarshal(body, &task))
				return task
			}
			task := submit("Hi! We plan to buy Contoso next month, before it is announced.")
			require.Equal(t, spec.StatusRequiresIntervention, task.Status)
			require.Len(t, task.Reasons, 1)
			m := task.Reasons[0].Matches
			require.Len(t, m, 1)
			require.Equal(t, "buy Contoso", m[0].Quote)
			require.Equal(t, spec.VerdictJudge, m[0].Verdict)
			require.Equal(t, "We plan to buy Contoso next month, before it is announced.", m[0].Text)

			task = submit("We plan to announce the picnic before the companies' summer break.")
			require.Equal(t, spec.StatusApproved, task.Status, "the judge said no: %+v", task.Reasons)
			require.Positive(t, srv.Calls())
			for _, r := range srv.Requests() {
				require.Equal(t, "Bearer sk-judge", r.Authorization)
			}
		})
	}
}
