// Package embedtest is an OpenAI-compatible embeddings endpoint for tests of
// the semantic matching through the embeddings client: a loopback HTTP server
// answering POST /v1/embeddings with deterministic vectors that carry some
// meaning, and that can be told to fail or to be slow. It never reaches the
// network.
//
//	srv := embedtest.NewServer(t)
//	matcher := &embeddings.Client{URL: srv.URL(), Threshold: 0.4}
//	srv.Fail(http.StatusServiceUnavailable) // every request answers 503
//	srv.Fail(0)                             // back to normal
//	srv.Delay(2 * time.Second)              // answers after 2 s
//
// A text's vector ([Embed]) is a bag of its words: each word is case-folded,
// stripped of accents and of a plural or verb ending, replaced by its concept
// when a small built-in table of synonyms (in English, German, French and
// Spanish) has it, and hashed into one of [Dim] dimensions with a sign. Texts
// sharing words or synonyms have a positive cosine similarity; unrelated
// texts about 0. It is no language model: it exists so that a test can show
// a paraphrase matching through an embeddings endpoint, deterministically.
// Its table is its own, independent of the built-in matcher's.
package embedtest

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Dim is the dimension of the vectors.
const Dim = 256

// Path is the path the server answers.
const Path = "/v1/embeddings"

// synonyms maps words (normalised, without ending) to their concept.
var synonyms = func() map[string]string {
	groups := [][]string{
		{"acquire", "acquisition", "buy", "purchase", "takeover", "merger", "buyout", "ubernahme", "rachat", "adquisicion", "compra"},
		{"secret", "confidential", "unannounced", "undisclosed", "private", "geheim", "vertraulich", "confidentiel", "secreto"},
		{"announce", "announced", "public", "publish", "published"},
		{"salary", "salari", "pay", "paid", "wage", "compensation", "earn", "gehalt", "salaire", "sueldo"},
		{"employee", "staff", "worker", "colleague", "mitarbeiter", "employe", "empleado"},
		{"password", "passphrase", "credential", "login", "passwort", "contrasena"},
		{"health", "medical", "sick", "illness", "diagnos", "krank", "malade", "enfermedad"},
		{"company", "compani", "firm", "business", "unternehmen", "firma", "entreprise", "empresa"},
	}
	m := map[string]string{}
	for _, g := range groups {
		for _, w := range g {
			m[w] = "#" + g[0]
		}
	}
	return m
}()

var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or of to in on at for with by from is are was were be it its this that
		we our you your they their i my me not no yet about other any some please der die das und ist nicht le la les de et
		un une el los las y es`) {
		stopWords[w] = true
	}
}

// words returns the normalised words of text that are not stop words.
func words(text string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(norm.NFKD.String(strings.ToLower(text)), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r)
	}) {
		w := strings.Map(func(r rune) rune {
			if unicode.Is(unicode.Mn, r) {
				return -1
			}
			return r
		}, f)
		if len(w) < 2 || stopWords[w] {
			continue
		}
		out = append(out, w)
	}
	return out
}

// term returns the concept of w, or w without a plural or verb ending.
func term(w string) string {
	if c, ok := synonyms[w]; ok {
		return c
	}
	for _, suf := range []string{"ies", "ing", "ed", "es", "s", "e"} {
		if len(w) > len(suf)+3 && strings.HasSuffix(w, suf) {
			w = strings.TrimSuffix(w, suf)
			if suf == "ies" {
				w += "i"
			}
			break
		}
	}
	if c, ok := synonyms[w]; ok {
		return c
	}
	return w
}

// Embed returns the vector of text: Dim values, not normalised; all zero for
// a text without words.
func Embed(text string) []float64 {
	v := make([]float64, Dim)
	for _, w := range words(text) {
		h := fnv.New64a()
		_, _ = h.Write([]byte(term(w)))
		x := h.Sum64()
		sign := 1.0
		if x&1 == 1 {
			sign = -1
		}
		v[(x>>1)%Dim] += sign
	}
	return v
}

// Similarity returns the cosine similarity of the vectors of a and b, as
// the embeddings client computes it (0 when one has no words).
func Similarity(a, b string) float64 {
	va, vb := Embed(a), Embed(b)
	var ab, aa, bb float64
	for i := range va {
		ab, aa, bb = ab+va[i]*vb[i], aa+va[i]*va[i], bb+vb[i]*vb[i]
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

// Server is the endpoint. Its methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	status   int           // answered instead of the vectors when not 0
	delay    time.Duration // before answering
	requests int
	inputs   []string
	auth     []string
}

// NewServer starts a server on 127.0.0.1, closed when the test ends.
func NewServer(t testing.TB) *Server {
	s := &Server{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL returns the full endpoint, for embeddings.Client's URL or
// --embeddings-url.
func (s *Server) URL() string { return s.srv.URL + Path }

// Fail makes every request answer status (with a short error body); 0 makes
// the server answer normally again.
func (s *Server) Fail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = status
}

// Delay makes every request wait d before its answer (or until the client
// hangs up); 0 answers at once.
func (s *Server) Delay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Requests returns the number of requests received so far.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Inputs returns every text embedded so far, in order of arrival.
func (s *Server) Inputs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.inputs...)
}

// Authorizations returns the Authorization header of every request so far.
func (s *Server) Authorizations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	status, delay := s.status, s.delay
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if status != 0 {
		http.Error(w, "embedtest: failing on purpose", status)
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if r.Method != http.MethodPost || r.URL.Path != Path {
		http.Error(w, "embedtest: POST "+Path+" only", http.StatusNotFound)
		return
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "embedtest: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.inputs = append(s.inputs, req.Input...)
	s.mu.Unlock()
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	data := make([]item, len(req.Input))
	for i, in := range req.Input {
		data[i] = item{"embedding", i, Embed(in)}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": 0, "total_tokens": 0}})
}
