package embedtest_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/testkit/embedtest"
	"github.com/aiusage/kit/policy/embeddings"
)

func TestSimilarity(t *testing.T) {
	t.Parallel()
	const instruction = "Information about unannounced acquisitions of other companies"
	tests := []struct {
		name     string
		text     string
		min, max float64
	}{
		{"same text", instruction, 0.999, 1.001},
		{"paraphrase", "a secret plan to buy Contoso, not announced yet", 0.4, 1},
		{"other language", "Die geheime Übernahme der Firma", 0.5, 1},
		{"unrelated", "Write a haiku about autumn leaves.", -0.2, 0.2},
		{"no words", "...", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := embedtest.Similarity(tt.text, instruction)
			require.GreaterOrEqual(t, got, tt.min)
			require.LessOrEqual(t, got, tt.max)
			require.Equal(t, embedtest.Embed(tt.text), embedtest.Embed(tt.text), "deterministic")
		})
	}
}

func TestServer(t *testing.T) {
	t.Parallel()
	srv := embedtest.NewServer(t)
	c := &embeddings.Client{URL: srv.URL(), APIKey: "k", QueryCacheSize: -1}
	segs, queries := []string{"We will buy Contoso secretly.", "Nice weather."}, []string{"unannounced acquisitions"}
	scores, err := c.Scores(context.Background(), segs, queries)
	require.NoError(t, err)
	require.InDelta(t, embedtest.Similarity(segs[0], queries[0]), scores[0][0], 1e-9)
	require.InDelta(t, embedtest.Similarity(segs[1], queries[0]), scores[0][1], 1e-9)
	require.Equal(t, []string{"We will buy Contoso secretly.", "Nice weather.", "unannounced acquisitions"}, srv.Inputs())
	require.Equal(t, []string{"Bearer k"}, srv.Authorizations())

	srv.Fail(http.StatusServiceUnavailable)
	_, err = c.Scores(context.Background(), segs, queries)
	require.ErrorContains(t, err, "503")
	srv.Fail(0)

	srv.Delay(time.Second)
	fast := &embeddings.Client{URL: srv.URL(), HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}}
	_, err = fast.Scores(context.Background(), segs, queries)
	require.ErrorContains(t, err, "Timeout")
	srv.Delay(0)
	_, err = fast.Scores(context.Background(), segs, queries)
	require.NoError(t, err)
	require.Equal(t, 4, srv.Requests())
}
