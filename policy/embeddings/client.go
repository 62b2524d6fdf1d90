package embeddings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/aiusage/kit/internal/infra/openaiapi"
	"github.com/aiusage/kit/policy"
)

// Defaults of [Client].
const (
	// DefaultThreshold is the default cosine similarity at which a segment
	// matches a query: high, so that a segment matches when it says about the
	// same thing, not merely when it shares the subject. Similarity scales
	// differ between models: tune it per model on examples.
	DefaultThreshold = 0.8
	// DefaultTimeout is the timeout of the default HTTP client.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxBatch is the default number of texts per request.
	DefaultMaxBatch = 256
	// DefaultQueryCacheSize is the default number of query embeddings kept.
	DefaultQueryCacheSize = 1024
	// MaxResponseBytes bounds the body of an answer.
	MaxResponseBytes = 64 << 20
)

// Client is a [policy.SemanticMatcher] calling an OpenAI-compatible
// embeddings endpoint. It is safe for concurrent use; use it by pointer and do
// not copy it after first use. The embeddings of queries (the Semantic
// instructions' texts, which repeat from request to request) are cached in
// memory, so a request usually embeds only its own segments.
type Client struct {
	// URL is the full embeddings endpoint, for example
	// http://localhost:11434/v1/embeddings. Required.
	URL string
	// Model is sent as "model".
	Model string
	// APIKey, when set, is sent as "Authorization: Bearer <APIKey>", or in
	// the header APIKeyHeader names.
	APIKey string
	// APIKeyHeader, when set, is the header that carries APIKey as it is,
	// instead of Authorization with Bearer: "api-key" for Azure OpenAI.
	APIKeyHeader string
	// HTTPClient sends the requests. Default: a client with DefaultTimeout
	// (30 s). Either way, a redirect is followed only within the origin of
	// URL; one elsewhere fails the request with [ErrRedirect].
	HTTPClient *http.Client
	// Threshold is the cosine similarity at which a segment matches a
	// query. Default (0): DefaultThreshold (0.8).
	Threshold float64
	// MaxBatch is the most texts sent in one request; more are sent in
	// several. Default (0): DefaultMaxBatch (256).
	MaxBatch int
	// QueryCacheSize is the number of query embeddings kept; when full, an
	// arbitrary one is dropped. Default (0): DefaultQueryCacheSize (1024);
	// negative disables the cache.
	QueryCacheSize int

	mu      sync.Mutex
	queries map[queryKey][]float64 // unit vectors
}

type queryKey struct{ model, text string }

var _ policy.SemanticScorer = (*Client)(nil)

var defaultHTTPClient = &http.Client{Timeout: DefaultTimeout}

// Match implements [policy.SemanticMatcher]: it embeds the segments and the
// queries not cached, in requests of at most MaxBatch texts, and returns for
// each query the segments whose cosine similarity reaches Threshold.
func (c *Client) Match(ctx context.Context, segments []string, queries []string) ([][]int, error) {
	scores, err := c.Scores(ctx, segments, queries)
	if err != nil {
		return nil, err
	}
	threshold := c.MatchThreshold()
	out := make([][]int, len(queries))
	for i, row := range scores {
		for j, s := range row {
			if s >= threshold {
				out[i] = append(out[i], j)
			}
		}
	}
	return out, nil
}

// Scores implements [policy.SemanticScorer]: it embeds the segments and the
// queries not cached, in requests of at most MaxBatch texts, and returns the
// cosine similarity of each segment to each query, in [-1, 1].
func (c *Client) Scores(ctx context.Context, segments []string, queries []string) ([][]float64, error) {
	if c.URL == "" {
		return nil, errors.New("embeddings: Client.URL is required")
	}
	out := make([][]float64, len(queries))
	for i := range out {
		out[i] = make([]float64, len(segments))
	}
	if len(segments) == 0 || len(queries) == 0 {
		return out, nil
	}
	qvec := make([][]float64, len(queries))
	var missing []string
	missingAt := map[string][]int{}
	for i, q := range queries {
		if v := c.cached(q); v != nil {
			qvec[i] = v
			continue
		}
		if _, ok := missingAt[q]; !ok {
			missing = append(missing, q)
		}
		missingAt[q] = append(missingAt[q], i)
	}
	vecs, err := c.embed(ctx, append(append(make([]string, 0, len(segments)+len(missing)), segments...), missing...))
	if err != nil {
		return nil, err
	}
	svec := vecs[:len(segments)]
	for k, q := range missing {
		v := vecs[len(segments)+k]
		c.store(q, v)
		for _, i := range missingAt[q] {
			qvec[i] = v
		}
	}
	dim := len(svec[0])
	for _, v := range qvec {
		if len(v) != dim {
			return nil, fmt.Errorf("embeddings: embeddings of %d and %d dimensions", dim, len(v))
		}
	}
	for i, q := range qvec {
		for j, s := range svec {
			out[i][j] = dot(q, s)
		}
	}
	return out, nil
}

// MatchThreshold implements [policy.SemanticScorer]: Threshold, or
// DefaultThreshold when it is 0.
func (c *Client) MatchThreshold() float64 {
	if c.Threshold == 0 {
		return DefaultThreshold
	}
	return c.Threshold
}

func (c *Client) cached(q string) []float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queries[queryKey{c.Model, q}]
}

func (c *Client) store(q string, v []float64) {
	size := c.QueryCacheSize
	if size == 0 {
		size = DefaultQueryCacheSize
	}
	if size < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queries == nil {
		c.queries = map[queryKey][]float64{}
	}
	for k := range c.queries {
		if len(c.queries) < size {
			break
		}
		delete(c.queries, k)
	}
	c.queries[queryKey{c.Model, q}] = v
}

// request and response are the wire format of the embeddings endpoint.
type request struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type response struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}

// embed returns the unit-length embeddings of texts, in order, all of one
// dimension.
func (c *Client) embed(ctx context.Context, texts []string) ([][]float64, error) {
	batch := c.MaxBatch
	if batch <= 0 {
		batch = DefaultMaxBatch
	}
	out := make([][]float64, 0, len(texts))
	for start := 0; start < len(texts); start += batch {
		vecs, err := c.post(ctx, texts[start:min(len(texts), start+batch)])
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	for _, v := range out {
		if len(v) != len(out[0]) {
			return nil, fmt.Errorf("embeddings: embeddings of %d and %d dimensions", len(out[0]), len(v))
		}
	}
	return out, nil
}

// post sends one request and returns the embeddings of texts, normalised.
func (c *Client) post(ctx context.Context, texts []string) ([][]float64, error) {
	body, err := json.Marshal(request{Model: c.Model, Input: texts})
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient
	}
	ep := openaiapi.Endpoint{URL: c.URL, APIKey: c.APIKey, APIKeyHeader: c.APIKeyHeader, Client: hc, Redirect: redirectError}
	req, err := ep.NewRequest(ctx, body)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	a, err := ep.Do(req, MaxResponseBytes)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	if !a.OK() {
		return nil, fmt.Errorf("embeddings: %s answered %s", c.URL, a.Detail())
	}
	raw := a.Body
	if len(raw) > MaxResponseBytes {
		return nil, fmt.Errorf("embeddings: answer larger than %d bytes", MaxResponseBytes)
	}
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("embeddings: decoding the answer: %w", err)
	}
	if len(r.Data) != len(texts) {
		return nil, fmt.Errorf("embeddings: %d embeddings for %d inputs", len(r.Data), len(texts))
	}
	out := make([][]float64, len(texts))
	for _, d := range r.Data {
		if d.Index == nil || *d.Index < 0 || *d.Index >= len(texts) || out[*d.Index] != nil {
			return nil, errors.New("embeddings: answer with a missing, repeated or out-of-range index")
		}
		v, err := normalise(d.Embedding)
		if err != nil {
			return nil, err
		}
		out[*d.Index] = v
	}
	return out, nil
}

// normalise returns v scaled to unit length; a zero vector stays zero.
func normalise(v []float64) ([]float64, error) {
	if len(v) == 0 {
		return nil, errors.New("embeddings: empty embedding")
	}
	n := 0.0
	for _, x := range v {
		n += x * x
	}
	n = math.Sqrt(n)
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return nil, errors.New("embeddings: embedding with a non-finite value")
	}
	out := make([]float64, len(v))
	if n == 0 {
		return out, nil
	}
	for i, x := range v {
		out[i] = x / n
	}
	return out, nil
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
