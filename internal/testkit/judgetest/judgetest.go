// Package judgetest is a stand-in model judge for tests of the judge path: a
// loopback HTTP server answering POST /v1/chat/completions as an
// OpenAI-compatible chat completions endpoint does, with the answer a test's
// function decides from the prompt, and that can be told to fail, to ask
// for a wait (429 with Retry-After) or to be slow. It never reaches the
// network.
//
//	srv := judgetest.NewServer(t, func(prompt string) judgetest.Answer {
//		if strings.Contains(prompt, "merger plans") {
//			return judgetest.Match("merger plans")
//		}
//		return judgetest.NoMatch()
//	})
//	client := &judge.Client{URL: srv.URL()}
//	srv.Fail(http.StatusTooManyRequests, "2") // 429, Retry-After: 2
//	srv.Fail(0, "")                           // back to normal
//	srv.Delay(2 * time.Second)                // answers after 2 s
//
// The decision sees the prompt as the model would: every message's content,
// joined by newlines. It is a test's rule, not a language model; a rule that
// obeys text written in the request's sentence stands for a judge that
// follows injected instructions.
package judgetest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Path is the path the server answers.
const Path = "/v1/chat/completions"

// Answer is what the stand-in answers one chat completion with.
type Answer struct {
	// Content, when set, is the assistant message's content as it is (an
	// answer that does not follow the schema, say).
	Content string
	// Match and Quote are, without Content, the structured answer
	// {"match": Match, "quote": Quote}.
	Match bool
	Quote string
}

// Match answers that the sentence matches, quoting quote.
func Match(quote string) Answer { return Answer{Match: true, Quote: quote} }

// NoMatch answers that the sentence does not match.
func NoMatch() Answer { return Answer{} }

// Raw answers content as the assistant message, as it is.
func Raw(content string) Answer { return Answer{Content: content} }

// Request is one chat completion the server received.
type Request struct {
	// Messages are the request's messages, in order.
	Messages []Message
	// Model is the request's "model".
	Model string
	// Schema reports whether the request asked for structured output
	// (response_format of type json_schema).
	Schema bool
	// Authorization and APIKey are the headers of those names.
	Authorization, APIKey string
	// Bytes is the size of the request's body.
	Bytes int
	// At is when the request arrived.
	At time.Time
}

// Message is one message of a [Request].
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Prompt is every message's content joined by newlines: what the decision
// of [NewServer] sees.
func (r Request) Prompt() string {
	parts := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n")
}

// Server is the stand-in judge.
type Server struct {
	srv    *httptest.Server
	decide func(prompt string) Answer

	mu         sync.Mutex
	status     int
	retryAfter string
	delay      time.Duration
	requests   []Request
}

// NewServer starts a stand-in judge answering with decide, closed when the
// test ends.
func NewServer(t testing.TB, decide func(prompt string) Answer) *Server {
	t.Helper()
	s := &Server{decide: decide}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the full endpoint, for judge.Client URL or --judge-url.
func (s *Server) URL() string { return s.srv.URL + Path }

// Fail makes every request answer status (with the header Retry-After set
// to retryAfter when not empty) until Fail(0, "").
func (s *Server) Fail(status int, retryAfter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.retryAfter = status, retryAfter
}

// Delay makes every answer wait d first (0: none), or until the client goes.
func (s *Server) Delay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Requests returns the chat completions received so far, failed or not.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Calls is len(Requests()).
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path || r.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	var body struct {
		Model          string    `json:"model"`
		Messages       []Message `json:"messages"`
		ResponseFormat *struct {
			Type       string          `json:"type"`
			JSONSchema json.RawMessage `json:"json_schema"`
		} `json:"response_format"`
	}
	raw := &countingReader{r: r.Body}
	if err := json.NewDecoder(raw).Decode(&body); err != nil {
		http.Error(w, `{"error":{"message":"the body is not JSON"}}`, http.StatusBadRequest)
		return
	}
	req := Request{Messages: body.Messages, Model: body.Model, Authorization: r.Header.Get("Authorization"),
		APIKey: r.Header.Get("api-key"), Bytes: raw.n, At: time.Now(),
		Schema: body.ResponseFormat != nil && body.ResponseFormat.Type == "json_schema" && len(body.ResponseFormat.JSONSchema) > 0}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	status, retryAfter, delay := s.status, s.retryAfter, s.delay
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if status != 0 {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":{"message":"the stand-in judge was told to fail"}}`))
		return
	}
	a := s.decide(req.Prompt())
	content := a.Content
	if content == "" {
		b, _ := json.Marshal(struct {
			Match bool   `json:"match"`
			Quote string `json:"quote"`
		}{a.Match, a.Quote})
		content = string(b)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-judgetest", "object": "chat.completion", "model": body.Model,
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
			"message": map[string]string{"role": "assistant", "content": content}}},
		"usage": map[string]int{"prompt_tokens": raw.n / 4, "completion_tokens": len(content) / 4,
			"total_tokens": raw.n/4 + len(content)/4},
	})
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r interface{ Read([]byte) (int, error) }
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// Sentence returns the text a prompt of policy/judge's Client asks about:
// the lines between the last line that begins with its begin marker
// ("⟦BEGIN DATA") and the next that begins with its end marker; "" when
// the prompt has none.
func Sentence(prompt string) string {
	lines := strings.Split(prompt, "\n")
	begin := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "⟦BEGIN DATA ") {
			begin = i
		}
	}
	if begin < 0 {
		return ""
	}
	for j := begin + 1; j < len(lines); j++ {
		if strings.HasPrefix(lines[j], "⟦END DATA ") {
			return strings.Join(lines[begin+1:j], "\n")
		}
	}
	return ""
}
