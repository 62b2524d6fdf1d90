package otlpwire

import (
	"errors"
	"math"
	"net/http"
	"strconv"
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
// detail; an error of no kind is logged and answered with a generic message.
func (h *handler) writeError(w http.ResponseWriter, r *http.Request, enc encoding, err error) int {
	st := statusOf(err)
	s := &status.Status{Code: int32(rpcCode(st)), Message: messageOf(err, st)}
	if st == http.StatusInternalServerError {
		h.cfg.Logger.ErrorContext(r.Context(), "otlp ingest failed", "signal", h.signal.String(), "error", err)
	}
	var e *spec.Error
	if st == http.StatusBadRequest && errors.As(err, &e) {
		br := &errdetails.BadRequest{}
		if e.Field != "" {
			br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: e.Field, Description: e.Detail})
		}
		for _, f := range e.Fields {
			br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: f.Field, Description: f.Message})
		}
		if len(br.FieldViolations) > 0 {
			s.Details = appendAny(s.Details, br)
		}
	}
	if st == http.StatusTooManyRequests || st == http.StatusServiceUnavailable {
		d := h.cfg.RetryAfter
		var ra interface{ RetryAfter() time.Duration }
		if errors.As(err, &ra) && ra.RetryAfter() > 0 {
			d = ra.RetryAfter()
		}
		secs := int64(math.Ceil(d.Seconds()))
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
