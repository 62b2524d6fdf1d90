package otlpwire

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aiusage/kit/spec"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// detailInternal is the message of an error of no kind: its own words stay
// in the log.
const detailInternal = "internal error; the failure is logged on the server"

// statusOf returns the HTTP status of err: 415 for errUnsupportedMedia,
// else spec.StatusOf.
func statusOf(err error) int {
	if errors.Is(err, errUnsupportedMedia) {
		return http.StatusUnsupportedMediaType
	}
	return spec.StatusOf(err)
}

// writeError answers err as a google.rpc.Status in encoding enc, with the
// HTTP status of its kind, and returns that status. A 429 or 503 carries
// Retry-After and a RetryInfo detail; a 400 naming a field a BadRequest
// detail. An error of no kind is answered with a generic message and logged,
// as is a 5xx carrying the failure behind it (spec.Error.Err), unless the
// client went away.
func (h *handler) writeError(w http.ResponseWriter, r *http.Request, enc encoding, err error) int {
	st := statusOf(err)
	// A protobuf string is UTF-8, or neither encoding marshals it.
	s := &status.Status{Code: int32(rpcCode(st)), Message: strings.ToValidUTF8(messageOf(err, st), "\uFFFD")}
	var e *spec.Error
	gone := errors.Is(err, context.Canceled) && r.Context().Err() != nil
	if !gone && (st == http.StatusInternalServerError || st >= 500 && errors.As(err, &e) && e.Err != nil) {
		h.cfg.Logger.ErrorContext(r.Context(), "otlp ingest failed", "signal", h.signal.String(), "error", err)
	}
	if br := badRequestOf(err, st); br != nil {
		s.Details = appendAny(s.Details, br)
	}
	if st == http.StatusTooManyRequests || st == http.StatusServiceUnavailable {
		secs := int64(math.Ceil(retryDelay(err, h.cfg.RetryAfter).Seconds()))
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		s.Details = appendAny(s.Details, &errdetails.RetryInfo{RetryDelay: durationpb.New(time.Duration(secs) * time.Second)})
	}
	body, mErr := marshal(enc, s)
	if mErr != nil {
		h.cfg.Logger.ErrorContext(r.Context(), "otlp status not encoded", "error", mErr)
		body = nil
	}
	writeBody(w, enc, st, body)
	return st
}

// badRequestOf returns the BadRequest detail of err, whose status is st:
// the fields a 400 names, or nil when it names none.
func badRequestOf(err error, st int) *errdetails.BadRequest {
	var e *spec.Error
	if st != http.StatusBadRequest || !errors.As(err, &e) {
		return nil
	}
	br := &errdetails.BadRequest{}
	if e.Field != "" {
		br.FieldViolations = append(br.FieldViolations, violation(e.Field, e.Detail))
	}
	for _, f := range e.Fields {
		br.FieldViolations = append(br.FieldViolations, violation(f.Field, f.Message))
	}
	if len(br.FieldViolations) == 0 {
		return nil
	}
	return br
}

// retryDelay returns the time a client should wait before retrying after
// err: what its RetryAfter() method says when it has one that is positive,
// else def.
func retryDelay(err error, def time.Duration) time.Duration {
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) && ra.RetryAfter() > 0 {
		return ra.RetryAfter()
	}
	return def
}

// violation returns the BadRequest violation of field, in valid UTF-8.
func violation(field, description string) *errdetails.BadRequest_FieldViolation {
	return &errdetails.BadRequest_FieldViolation{Field: strings.ToValidUTF8(field, "\uFFFD"),
		Description: strings.ToValidUTF8(description, "\uFFFD")}
}

// messageOf returns what the client reads of err, whose status is st.
func messageOf(err error, st int) string {
	var e *spec.Error
	switch {
	case !errors.As(err, &e):
		if st == http.StatusInternalServerError {
			return detailInternal
		}
		return http.StatusText(st)
	case e.Detail == "" && st == http.StatusInternalServerError:
		return detailInternal
	case e.Detail == "":
		return http.StatusText(st)
	case e.Field != "":
		return e.Field + " " + e.Detail
	}
	return e.Detail
}

// appendAny appends m, packed as an Any, to details.
func appendAny(details []*anypb.Any, m proto.Message) []*anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		return details
	}
	return append(details, a)
}

// rpcCode returns the gRPC code of an HTTP status (the mapping of
// google.rpc.Code's documentation).
func rpcCode(st int) code.Code {
	switch st {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusMethodNotAllowed:
		return code.Code_INVALID_ARGUMENT
	case http.StatusUnauthorized:
		return code.Code_UNAUTHENTICATED
	case http.StatusForbidden:
		return code.Code_PERMISSION_DENIED
	case http.StatusNotFound:
		return code.Code_NOT_FOUND
	case http.StatusConflict:
		return code.Code_ABORTED
	case http.StatusUnprocessableEntity:
		return code.Code_FAILED_PRECONDITION
	case http.StatusTooManyRequests:
		return code.Code_RESOURCE_EXHAUSTED
	case http.StatusNotImplemented:
		return code.Code_UNIMPLEMENTED
	case http.StatusServiceUnavailable:
		return code.Code_UNAVAILABLE
	}
	return code.Code_INTERNAL
}

// marshal encodes m in encoding enc.
func marshal(enc encoding, m proto.Message) ([]byte, error) {
	if enc == encJSON {
		return protojson.Marshal(m)
	}
	return proto.Marshal(m)
}

// writeBody writes body, in encoding enc, with status st.
func writeBody(w http.ResponseWriter, enc encoding, st int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", enc.contentType())
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(st)
	_, _ = w.Write(body)
}

// WriteStatus answers r with status st and a google.rpc.Status carrying
// msg and the gRPC code of st, in the request's encoding: OTLP/JSON when
// its Content-Type is application/json, protobuf otherwise. It is for the
// refusals made in front of a [Handler] (authentication, bounds), which
// must answer as the handler does.
func WriteStatus(w http.ResponseWriter, r *http.Request, st int, msg string) {
	enc, _ := encodingOf(r.Header.Get("Content-Type")) // protobuf for any other type
	body, err := marshal(enc, &status.Status{Code: int32(rpcCode(st)), Message: msg})
	if err != nil {
		body = nil
	}
	writeBody(w, enc, st, body)
}
