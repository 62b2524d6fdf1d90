package httpx

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
)

// ListStream writes a JSON object whose first member is an array, one item
// at a time as a handler reads them, so that an answer costs the memory of
// one item rather than of the whole page. The answer (200, with the headers
// of [WriteJSON] but no Content-Length) starts with the first item;
// [ListStream.Close] writes the other members. Until then nothing is
// written, and an error can still be answered cleanly; after, an error can
// only abort the answer ([ListStream.Abort]), so a client never takes a cut
// page for a whole one.
type ListStream struct {
	w       http.ResponseWriter
	member  string
	bw      *bufio.Writer
	enc     *json.Encoder
	started bool
	items   int
}

// NewListStream returns a ListStream writing to w the object whose first
// member, named member, is the array of items.
func NewListStream(w http.ResponseWriter, member string) *ListStream {
	return &ListStream{w: w, member: member}
}

func (s *ListStream) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	s.w.WriteHeader(http.StatusOK)
	s.bw = bufio.NewWriterSize(s.w, 32<<10)
	s.enc = json.NewEncoder(s.bw)
	s.enc.SetEscapeHTML(false)
	b, _ := json.Marshal(s.member)
	_, _ = s.bw.WriteString("{")
	_, _ = s.bw.Write(b)
	_, _ = s.bw.WriteString(":[")
}

// Item writes one item of the array (encoded as [WriteJSON] would).
func (s *ListStream) Item(v any) error {
	s.start()
	if s.items > 0 {
		_ = s.bw.WriteByte(',')
	}
	s.items++
	return s.enc.Encode(v) // its newline is JSON whitespace
}

// Started reports whether the answer has started: an error now must
// [ListStream.Abort].
func (s *ListStream) Started() bool { return s.started }

// Close ends the array and writes the members of tail, a value encoding as
// a JSON object, after it; then the answer is complete.
func (s *ListStream) Close(tail any) error {
	b, err := json.Marshal(tail)
	if err != nil {
		return err
	}
	if len(b) < 2 || b[0] != '{' {
		return errors.New("httpx: ListStream.Close: tail is not a JSON object")
	}
	s.start()
	_, _ = s.bw.WriteString("]")
	if rest := bytes.TrimSpace(b[1:]); len(rest) > 1 { // more than "}"
		_ = s.bw.WriteByte(',')
	}
	_, _ = s.bw.Write(b[1:])
	_ = s.bw.WriteByte('\n')
	return s.bw.Flush()
}

// Abort ends an answer that has started and cannot be completed: the
// connection is closed, so the client sees a broken answer, never a short
// one that parses.
func (s *ListStream) Abort() {
	if s.started {
		_ = s.bw.Flush()
	}
	panic(http.ErrAbortHandler)
}
