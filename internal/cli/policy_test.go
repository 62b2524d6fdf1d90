package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/embedtest"
	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/policy/semeval"
	"github.com/aiusage/kit/spec"
)

// tinySet writes a set whose scores are 1 (a message that is its
// instruction) or 0 (no word in common) for every matcher, labelled so that
// each half's counts are known: it returns the file and the pairs.
func tinySet(t *testing.T) (string, []semeval.Pair) {
	t.Helper()
	var pairs []semeval.Pair
	var b strings.Builder
	for i := range 24 {
		ins := fmt.Sprintf("employee salaries of team %c", 'a'+i)
		p := semeval.Pair{Instruction: ins, Kind: "exact", Lang: "en"}
		switch i % 4 {
		case 0: // TP
			p.Message, p.Match = ins, true
		case 1: // FP
			p.Message, p.Match = ins, false
		case 2: // FN
			p.Message, p.Match = "zzqx wvvk", true
		case 3: // TN
			p.Message, p.Match = "zzqx wvvk", false
		}
		pairs = append(pairs, p)
		line, err := json.Marshal(p)
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "set.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path, pairs
}

func TestPolicyEvalFigures(t *testing.T) {
	t.Parallel()
	path, pairs := tinySet(t)
	r := runCLI(t, "", nil, "policy", "eval", "--set", path, "--thresholds", "0.5,0.99", "--format", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var rep evalReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Equal(t, path, rep.Set)
	require.Equal(t, 24, rep.Pairs)
	require.Len(t, rep.Matchers, 2)
	// The expected counts of each half, from the pairs' labels and
	// whether the message is its instruction.
	want := map[string]*semeval.Metrics{semeval.SplitTune: {}, semeval.SplitHoldout: {}}
	for _, p := range pairs {
		m := want[p.Split()]
		switch exact := p.Message == p.Instruction; {
		case p.Match && exact:
			m.TP++
		case exact:
			m.FP++
		case p.Match:
			m.FN++
		default:
			m.TN++
		}
	}
	for _, m := range rep.Matchers {
		require.Contains(t, []string{"builtin", "builtin-ngram"}, m.Name)
		require.Len(t, m.Splits, 2)
		for _, s := range m.Splits {
			w := want[s.Split]
			require.Equal(t, w.TP+w.FP+w.FN+w.TN, s.Pairs)
			require.Len(t, s.Metrics, 2)
			for _, got := range s.Metrics {
				require.Equal(t, [4]int{w.TP, w.FP, w.FN, w.TN}, [4]int{got.TP, got.FP, got.FN, got.TN}, "%s %s %v", m.Name, s.Split, got.Threshold)
				p, rc, f1 := 0.0, 0.0, 0.0
				if w.TP > 0 {
					p, rc = float64(w.TP)/float64(w.TP+w.FP), float64(w.TP)/float64(w.TP+w.FN)
					f1 = 2 * p * rc / (p + rc)
				}
				require.InDelta(t, p, got.Precision, 1e-9)
				require.InDelta(t, rc, got.Recall, 1e-9)
				require.InDelta(t, f1, got.F1, 1e-9)
				fpr := float64(w.FP) / float64(w.FP+w.TN)
				require.InDelta(t, fpr, got.FPR, 1e-9)
				require.InDelta(t, rc-fpr, got.J, 1e-9)
			}
		}
		// Both thresholds tie; the lower is the best.
		require.Equal(t, 0.5, m.BestOnTune.Threshold)
		require.Equal(t, 0.5, m.HoldoutAtBest.Threshold)
	}

	// The text table: one row per threshold, and the summary.
	r = runCLI(t, "", nil, "policy", "eval", "--set", path, "--thresholds", "0.5:0.7:0.1", "--split", "tune")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "set "+path+": 24 pairs")
	require.Contains(t, r.stdout, "matcher builtin (used at 0.47), tune half")
	require.Contains(t, r.stdout, "matcher builtin-ngram (used at 0.45), tune half")
	require.NotContains(t, r.stdout, "holdout half: ", "no sweep of the held-out half")
	for _, th := range []string{"0.50", "0.60", "0.70"} {
		require.Regexp(t, `(?m)^\s+`+th+`\s+\d+\s+\d+`, r.stdout)
	}
	require.Contains(t, r.stdout, "thresholds chosen on the tuning half")
	require.Regexp(t, `(?m)^\s+builtin\s+FPR <= 0\.10\s+`, r.stdout)
	require.Regexp(t, `(?m)^\s+builtin\s+best F1\s+0\.50\s+`, r.stdout)
	require.Contains(t, r.stdout, "matcher builtin per kind, holdout half, at 0.47 (standard sensitivity)")
	require.Contains(t, r.stdout, "matcher builtin per kind, holdout half, at 0.26 (high sensitivity)")
	require.NotContains(t, r.stdout, "matcher builtin-ngram per kind, holdout half, at 0.26", "the n-gram matcher has no recall threshold of its own")
}

// balancedSet writes a set like tinySet's (scores of 0.5 or more, or 0,
// for every matcher) with two pairs of each of TP, FP, FN and TN in each
// half. A message that is its instruction and one or two exclamation marks
// lands in either half (a message that is just its instruction would land
// in one: the parity of FNV-1a is that of the bytes).
func balancedSet(t *testing.T) (string, []semeval.Pair) {
	t.Helper()
	var pairs []semeval.Pair
	var b strings.Builder
	count := map[string]int{}
	for i := 0; len(count) < 8 || slices.Min(slices.Collect(maps.Values(count))) < 2; i++ {
		require.Less(t, i, 10000)
		ins := fmt.Sprintf("employee salaries of team %d", i)
		p := semeval.Pair{Instruction: ins, Kind: "exact", Lang: "en"}
		role := []string{"TP", "FP", "FN", "TN"}[i%4]
		switch role {
		case "TP":
			p.Message, p.Match = ins+strings.Repeat("!", 1+i/4%2), true
		case "FP":
			p.Message, p.Match = ins+strings.Repeat("!", 1+i/4%2), false
		case "FN":
			p.Message, p.Match = "zzqx wvvk", true
		case "TN":
			p.Message, p.Match = "zzqx wvvk", false
		}
		if count[p.Split()+role] >= 2 {
			continue
		}
		count[p.Split()+role]++
		pairs = append(pairs, p)
		line, err := json.Marshal(p)
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "set.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path, pairs
}

// TestPolicyEvalOperatingPoint checks the per-kind figures and the
// operating point chosen under --max-fpr: every message scores 0.5 or more,
// or 0, so any threshold up to 0.5 gives the same counts, with a tuning FPR of 0.5; a bound of
// 0.5 keeps it, one below leaves no threshold to choose.
func TestPolicyEvalOperatingPoint(t *testing.T) {
	t.Parallel()
	path, _ := balancedSet(t)
	r := runCLI(t, "", nil, "policy", "eval", "--set", path, "--thresholds", "0.5", "--format", "json", "--max-fpr", "0.5")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var rep evalReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.InDelta(t, 0.5, rep.MaxFPR, 1e-12)
	for _, m := range rep.Matchers {
		op := m.OperatingPoint
		require.NotNil(t, op, m.Name)
		require.Equal(t, 0.5, op.Tune.Threshold)
		require.Equal(t, [4]int{2, 2, 2, 2}, [4]int{op.Tune.TP, op.Tune.FP, op.Tune.FN, op.Tune.TN})
		require.InDelta(t, 0.5, op.Tune.FPR, 1e-12)
		require.InDelta(t, 0, op.Tune.J, 1e-12)
		require.Equal(t, [4]int{2, 2, 2, 2}, [4]int{op.Holdout.TP, op.Holdout.FP, op.Holdout.FN, op.Holdout.TN})
		require.Equal(t, m.HoldoutAtBest, op.Holdout)
		require.Len(t, op.HoldoutKinds, 1)
		require.Equal(t, "exact", op.HoldoutKinds[0].Kind)
		require.Equal(t, op.Holdout, op.HoldoutKinds[0].Metrics)
		require.NotEmpty(t, m.Kinds)
		require.Equal(t, "standard", m.Kinds[0].Sensitivity)
		require.InDelta(t, m.DefaultThreshold, m.Kinds[0].All.Threshold, 1e-12)
		got := m.Kinds[0].All
		got.Threshold = op.Holdout.Threshold
		require.Equal(t, op.Holdout, got, "the scores are 0 or at least 0.5: every threshold up to 0.5 counts alike")
	}
	require.Equal(t, "builtin", rep.Matchers[0].Name)
	require.InDelta(t, policy.LexicalRecallThreshold, rep.Matchers[0].RecallThreshold, 1e-12)
	require.Len(t, rep.Matchers[0].Kinds, 2)
	require.Equal(t, "high", rep.Matchers[0].Kinds[1].Sensitivity)
	require.Len(t, rep.Matchers[1].Kinds, 1, "the n-gram matcher has no recall threshold of its own")

	r = runCLI(t, "", nil, "policy", "eval", "--set", path, "--thresholds", "0.5", "--max-fpr", "0.4")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^\s+builtin\s+FPR <= 0\.40\s+none\s*$`, r.stdout)
	require.Regexp(t, `(?m)^\s+builtin\s+best F1\s+0\.50\s+0\.500\s+`, r.stdout)
}

func TestPolicyEvalDefaultSet(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "", nil, "policy", "eval", "--format", "json", "--split", "holdout")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var rep evalReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Equal(t, "builtin", rep.Set)
	require.GreaterOrEqual(t, rep.Pairs, 300)
	require.Len(t, rep.Matchers[0].Splits, 1)
	require.Len(t, rep.Matchers[0].Splits[0].Metrics, 19) // 0.05 to 0.95
	require.InDelta(t, 0.95, rep.Matchers[0].Splits[0].Metrics[18].Threshold, 1e-12)
	// The built-in matcher's operating point is its default threshold,
	// within the bound on the held-out half too.
	b := rep.Matchers[0]
	require.Equal(t, "builtin", b.Name)
	require.InDelta(t, semeval.DefaultMaxFPR, rep.MaxFPR, 1e-12)
	require.NotNil(t, b.OperatingPoint)
	require.InDelta(t, policy.DefaultLexicalThreshold, b.OperatingPoint.Tune.Threshold, 1e-9)
	require.LessOrEqual(t, b.OperatingPoint.Holdout.FPR, semeval.DefaultMaxFPR)
	require.InDelta(t, policy.LexicalRecallThreshold, b.BestOnTune.Threshold, 1e-9)
	require.Len(t, b.Kinds, 2)
	require.Len(t, b.Kinds[0].Kinds, len(semeval.Kinds))
	require.Equal(t, b.OperatingPoint.Holdout, b.Kinds[0].All)
}

func TestPolicyEvalEmbeddings(t *testing.T) {
	t.Parallel()
	srv := embedtest.NewServer(t)
	path, _ := tinySet(t)
	env := map[string]string{"AIUSAGE_EMBEDDINGS_API_KEY": "sk-eval"}
	r := runCLI(t, "", env, "policy", "eval", "--set", path, "--embeddings-url", srv.URL(), "--embeddings-threshold", "0.6", "--format", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var rep evalReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Len(t, rep.Matchers, 3)
	require.Equal(t, "embeddings", rep.Matchers[2].Name)
	require.Equal(t, 0.6, rep.Matchers[2].DefaultThreshold)
	require.Equal(t, rep.Matchers[0].Splits, rep.Matchers[2].Splits, "the tiny set scores 1 or 0 with any matcher")
	require.Contains(t, srv.Authorizations(), "Bearer sk-eval")

	srv.Fail(http.StatusInternalServerError)
	r = runCLI(t, "", nil, "policy", "eval", "--set", path, "--embeddings-url", srv.URL())
	require.Equal(t, ExitFailure, r.code)
	require.Contains(t, r.stderr, "policy eval: matcher embeddings:")
	require.Contains(t, r.stderr, "500")
}

func TestPolicyEvalErrors(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(`{"instruction":"a","message":"b","kind":"exact","lang":"en"}`+"\n"), 0o644))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"split", []string{"--split", "train"}, "--split must be tune, holdout or all"},
		{"format", []string{"--format", "xml"}, "--format must be text or json"},
		{"thresholds not numbers", []string{"--thresholds", "a,b"}, `--thresholds: "a" is not a number`},
		{"threshold out of range", []string{"--thresholds", "0.5,1.5"}, "threshold 1.5 is not in (0, 1]"},
		{"zero step", []string{"--thresholds", "0.1:0.9:0"}, "STEP must be positive"},
		{"max-fpr above 1", []string{"--max-fpr", "1.5"}, "--max-fpr must be in [0, 1], got 1.5"},
		{"max-fpr negative", []string{"--max-fpr", "-0.1"}, "--max-fpr must be in [0, 1], got -0.1"},
		{"max-fpr not a number", []string{"--max-fpr", "NaN"}, "--max-fpr must be in [0, 1]"},
		{"missing set", []string{"--set", "/no/such/set.jsonl"}, "--set: open /no/such/set.jsonl"},
		{"malformed set", []string{"--set", bad}, `line 1: "match" is missing`},
		{"model without url", []string{"--embeddings-model", "m"}, "--embeddings-model needs --embeddings-url"},
		{"bad url scheme", []string{"--embeddings-url", "ftp://example.com/v1/embeddings"}, "--embeddings-url must be an http or https URL"},
		{"arguments", []string{"extra"}, "takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, "", nil, append([]string{"policy", "eval"}, tt.args...)...)
			require.Equal(t, ExitUsage, r.code, r.stderr)
			require.Contains(t, r.stderr, tt.want)
		})
	}
}

// TestEmbeddingsFlagErrors checks the embeddings flags of every command that
// has them: a usage error naming the flag, before anything starts.
func TestEmbeddingsFlagErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"scheme", []string{"--embeddings-url", "localhost:11434/v1/embeddings"}, "--embeddings-url must be an http or https URL"},
		{"no host", []string{"--embeddings-url", "http:///v1/embeddings"}, "--embeddings-url has no host"},
		{"credentials in the URL", []string{"--embeddings-url", "https://u:secret@example.com/v1/embeddings"}, "--embeddings-url must not hold credentials"},
		{"threshold zero", []string{"--embeddings-url", "http://127.0.0.1:1/v1/embeddings", "--embeddings-threshold", "0"}, "--embeddings-threshold must be in (0, 1], got 0"},
		{"threshold above 1", []string{"--embeddings-url", "http://127.0.0.1:1/v1/embeddings", "--embeddings-threshold", "1.2"}, "--embeddings-threshold must be in (0, 1]"},
		{"threshold without url", []string{"--embeddings-threshold", "0.5"}, "--embeddings-threshold needs --embeddings-url"},
		{"negative timeout", []string{"--embeddings-url", "http://127.0.0.1:1/v1/embeddings", "--embeddings-timeout", "-1s"}, "--embeddings-timeout must be positive"},
		{"zero timeout", []string{"--embeddings-url", "http://127.0.0.1:1/v1/embeddings", "--embeddings-timeout", "0s"}, "--embeddings-timeout must be positive"},
		{"model without url", []string{"--embeddings-model", "nomic-embed-text"}, "--embeddings-model needs --embeddings-url"},
		{"auth", []string{"--embeddings-url", "http://127.0.0.1:1/v1/embeddings", "--embeddings-auth", "basic"}, "--embeddings-auth must be bearer, api-key or auto"},
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
				r := runCLI(t, "", nil, append(args, tt.args...)...)
				require.Equal(t, ExitUsage, r.code, r.stderr)
				require.Contains(t, r.stderr, strings.Join(cmd, " ")+": "+tt.want)
				require.NotContains(t, r.stderr, "secret")
			})
		}
	}
}

func TestEmbeddingsAuthHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url, auth, want string
	}{
		{"http://127.0.0.1/v1/embeddings", "auto", "bearer"},
		{"https://acme.openai.azure.com/openai/deployments/e/embeddings?api-version=2024-02-01", "auto", "api-key header"},
		{"https://acme.cognitiveservices.azure.com/openai/deployments/e/embeddings", "auto", "api-key header"},
		{"https://acme.openai.azure.com/openai/deployments/e/embeddings", "bearer", "bearer"},
		{"http://127.0.0.1/v1/embeddings", "api-key", "api-key header"},
	}
	for _, tt := range tests {
		t.Run(tt.url+" "+tt.auth, func(t *testing.T) {
			t.Parallel()
			f := &embeddingsFlags{url: tt.url, auth: tt.auth, apiKey: "k", threshold: 0.8, timeout: time.Second}
			_, attrs, err := f.matcher("test")
			require.NoError(t, err)
			got := map[string]string{}
			for _, a := range attrs {
				got[a.Key] = a.Value.String()
			}
			require.Equal(t, tt.want, got["embeddings_auth"])
			require.Equal(t, "embeddings", got["semantic_matcher"])
		})
	}
}

// TestServiceSemanticEmbeddings runs "service serve" with a local
// embeddings endpoint: a paraphrase of a Block instruction's text is caught
// through it, and while the endpoint fails or is too slow, tasks answer 422
// POLICY_ERROR, stay pending, and are evaluated once it is back.
func TestServiceSemanticEmbeddings(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			srv := embedtest.NewServer(t)
			dbURL := sqldbtest.URL(t, d)
			f := newFixture(t, dbURL)
			base, logs, _ := startService(t, serviceURLText, "--database-url", dbURL, "--embeddings-url", srv.URL(),
				"--embeddings-model", "embedtest", "--embeddings-threshold", "0.4", "--embeddings-timeout", "500ms")
			require.Contains(t, logs.String(), `semantic_matcher=embeddings embeddings_url=`+srv.URL())
			require.Contains(t, logs.String(), "embeddings_model=embedtest semantic_threshold=0.4 embeddings_timeout=500ms")
			key := f.key.Secret

			const instruction = "Information about unannounced acquisitions of other companies"
			create := map[string]any{
				"agentType": "DataProtection", "title": "Unannounced acquisitions",
				"trigger": map[string]any{"type": "Semantic", "text": instruction},
				"action":  "Block", "criticality": "High", "usedBy": []string{f.agent.ID},
			}
			status, body, _ := call(t, http.MethodPost, base+"organisations/"+f.org.ID+"/instructions", key, create)
			require.Equal(t, http.StatusCreated, status, string(body))
			submit := func(text string) (int, []byte) {
				status, body, _ := call(t, http.MethodPost, base+"review-tasks", key, map[string]any{"agentId": f.agent.ID,
					"request": map[string]any{"messages": []map[string]string{{"role": "user", "content": text}}}})
				return status, body
			}
			getTask := func(id string) spec.ReviewTask {
				status, body, _ := call(t, http.MethodGet, base+"review-tasks/"+id, key, nil)
				require.Equal(t, http.StatusOK, status, string(body))
				var task spec.ReviewTask
				require.NoError(t, json.Unmarshal(body, &task))
				return task
			}

			// The paraphrase shares no word with the instruction but its
			// meaning: the Block instruction's outcome, with the sentence
			// and its similarity.
			paraphrase := "a secret plan to buy Contoso, not announced yet"
			status, body = submit("Hi! " + paraphrase)
			require.Equal(t, http.StatusCreated, status, string(body))
			var task spec.ReviewTask
			require.NoError(t, json.Unmarshal(body, &task))
			require.Equal(t, spec.StatusRequiresIntervention, task.Status)
			require.Len(t, task.Reasons, 1)
			m := task.Reasons[0].Matches
			require.Len(t, m, 1)
			require.Equal(t, paraphrase, m[0].Text)
			require.InDelta(t, embedtest.Similarity(paraphrase, instruction), m[0].Similarity, 1e-9)
			require.GreaterOrEqual(t, m[0].Similarity, 0.4)
			requireSchema(t, "review-task", body)

			// Unrelated text is approved; the instruction's embedding was
			// cached, so only the messages' sentences are sent.
			status, body = submit("Write a haiku about autumn leaves.")
			require.Equal(t, http.StatusCreated, status, string(body))
			require.NoError(t, json.Unmarshal(body, &task))
			require.Equal(t, spec.StatusApproved, task.Status)
			require.Equal(t, 1, strings.Count(strings.Join(srv.Inputs(), "\n"), instruction))

			for _, outage := range []struct {
				name  string
				start func()
			}{
				{"failing", func() { srv.Fail(http.StatusServiceUnavailable) }},
				{"too slow", func() { srv.Delay(5 * time.Second) }},
			} {
				outage.start()
				status, body = submit("Between us: we are about to buy Contoso in secret.")
				require.Equal(t, http.StatusUnprocessableEntity, status, "%s: %s", outage.name, body)
				var e spec.ReviewError
				require.NoError(t, json.Unmarshal(body, &e))
				problem := e.Error
				require.Equal(t, spec.CodePolicyError, problem.Code, outage.name)
				require.NotEmpty(t, problem.TaskID)
				require.Contains(t, []string{spec.StatusPending, spec.StatusProcessing}, getTask(problem.TaskID).Status, outage.name)
				time.Sleep(1500 * time.Millisecond) // a background retry fails too
				require.Contains(t, []string{spec.StatusPending, spec.StatusProcessing}, getTask(problem.TaskID).Status, outage.name)

				// The endpoint is back: a retry evaluates the task.
				srv.Fail(0)
				srv.Delay(0)
				deadline := time.Now().Add(40 * time.Second)
				for getTask(problem.TaskID).Status != spec.StatusRequiresIntervention {
					require.True(t, time.Now().Before(deadline), "%s: task %s not evaluated", outage.name, problem.TaskID)
					time.Sleep(100 * time.Millisecond)
				}
				require.Equal(t, "Between us: we are about to buy Contoso in secret.", getTask(problem.TaskID).Reasons[0].Matches[0].Text)
			}
		})
	}
}
