package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/aiusage/kit/internal/infra/reqcheck"
	"github.com/aiusage/kit/spec"
)

// MaxBodyBytes is the largest request body [ReadJSON] accepts: 1 MiB.
const MaxBodyBytes = 1 << 20

// DetailBody is the detail of a [*spec.Error] about a request body.
const DetailBody = reqcheck.DetailBody

// FieldError returns an error of kind with detail, naming one field.
func FieldError(kind error, detail, field, format string, a ...any) *spec.Error {
	return &spec.Error{Kind: kind, Detail: detail, Fields: []spec.ProblemField{{Field: field, Message: fmt.Sprintf(format, a...)}}}
}

// InvalidBody returns a spec.ErrInvalid error naming one field of the body.
func InvalidBody(field, format string, a ...any) *spec.Error {
	return reqcheck.Invalid(field, format, a...)
}

// ReadJSON reads the body of r, which must be sent as Content-Type
// application/json and hold at most [MaxBodyBytes] (else an [*spec.Error] of kind
// spec.ErrTooLarge).
func ReadJSON(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		got := ct
		if got == "" {
			got = "none"
		}
		return nil, FieldError(spec.ErrInvalid, "Send the body as JSON, with Content-Type: application/json.", "Content-Type",
			"must be application/json, got %s", got)
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		return nil, BodyError(err)
	}
	return b, nil
}

// BodyError returns err, the error of reading a request body, as the
// [*spec.Error] a client is answered: of kind spec.ErrTooLarge for a body over
// its limit (an *http.MaxBytesError), else of kind spec.ErrInvalid, saying
// whether the body did not arrive within the read deadline or could not be
// read at all; each names the field "body".
func BodyError(err error) *spec.Error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return FieldError(spec.ErrTooLarge, fmt.Sprintf("The body is larger than %d bytes.", mbe.Limit), "body",
			"is larger than %d bytes", mbe.Limit)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return FieldError(spec.ErrInvalid, "The body did not arrive in time.", "body",
			"did not arrive within the request's read deadline; send it at once")
	}
	return FieldError(spec.ErrInvalid, DetailBody, "body", "could not be read: %v", err)
}

// DecodeJSON checks that body is exactly one JSON value of valid UTF-8 that
// the spec schema named schema accepts, and decodes it into v. A failure is
// an [*spec.Error] of kind spec.ErrInvalid naming every field to blame, dotted
// ("trigger.pattern"), with the array items on the way ("usedBy", "item 2").
func DecodeJSON(schema string, body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return InvalidBody("body", "is empty; send a JSON object")
	}
	if !utf8.Valid(body) {
		return InvalidBody("body", "is not valid UTF-8")
	}
	if err := checkSingleJSON(body); err != nil {
		return err
	}
	if err := reqcheck.JSON(schema, body); err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		// The schema accepted the body, so this is a value the Go types
		// cannot hold; name the field where encoding/json can.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return InvalidBody(te.Field, "has the wrong type")
		}
		return InvalidBody("body", "cannot be read: %v", err)
	}
	return nil
}

// checkSingleJSON reports a body that is not exactly one JSON value, with the
// offset of the first error.
func checkSingleJSON(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return InvalidBody("body", "is not valid JSON: %v (at byte %d)", se, se.Offset)
		}
		return InvalidBody("body", "is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return InvalidBody("body", "has data after the JSON value (at byte %d)", dec.InputOffset())
	}
	return nil
}

// WriteJSON writes v as a JSON body with status. It encodes into a buffer
// first, so an encoding error is returned before anything is written and can
// still be answered as a clean 500. HTML characters are not escaped. Answers
// are marked not to be cached or sniffed.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteProblem writes p as an RFC 9457 problem details body, with p.Status.
// Headers the status calls for (WWW-Authenticate, Retry-After, Allow) are the
// caller's to set first.
func WriteProblem(w http.ResponseWriter, p spec.Problem) {
	b, err := json.Marshal(p)
	if err != nil { // a Problem with sane extensions always encodes
		p = spec.Problem{Type: "about:blank", Title: "Internal Server Error", Status: http.StatusInternalServerError}
		b, _ = json.Marshal(p)
	}
	h := w.Header()
	h.Set("Content-Type", spec.ProblemContentType)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_, _ = w.Write(b)
}
