package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

func TestWriteError(t *testing.T) {
	var logs bytes.Buffer
	style := &ErrorStyle{
		Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
		Challenge:  `Bearer realm="test"`,
		RetryAfter: "7",
		Internal:   "It failed.",
		Fixed:      map[int]string{http.StatusUnauthorized: "Send a key."},
		Detail:     func(status int) string { return fmt.Sprintf("status %d", status) },
	}
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for _, tc := range []struct {
		name   string
		err    error
		ctx    context.Context
		status int
		body   string
		header http.Header
		logged bool
	}{
		{name: "field", err: spec.Invalid("limit", "must be a number"), status: 400,
			body: `{"type":"about:blank","title":"Bad Request","status":400,"detail":"limit must be a number","errors":[{"field":"limit","message":"must be a number"}]}`},
		{name: "bare kind", err: fmt.Errorf("record x: %w", spec.ErrNotFound), status: 404,
			body: `{"type":"about:blank","title":"Not Found","status":404,"detail":"status 404"}`},
		{name: "fixed", err: spec.Errorf(spec.ErrUnauthorized, "The key is revoked."), status: 401,
			body:   `{"type":"about:blank","title":"Unauthorized","status":401,"detail":"Send a key."}`,
			header: http.Header{"Www-Authenticate": {`Bearer realm="test"`}}},
		{name: "unknown", err: errors.New("secret words"), status: 500, logged: true,
			body: `{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"It failed.","requestId":"r1"}`},
		{name: "failure with detail", err: &spec.Error{Detail: "The list cannot be read now.", Err: errors.New("disk")}, status: 500, logged: true,
			body: `{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"The list cannot be read now."}`},
		{name: "timed out", err: errors.New("query cut"), ctx: expired, status: 503,
			body:   `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"The request ran out of time; retry it shortly."}`,
			header: http.Header{"Retry-After": {"7"}}},
		{name: "unavailable with a cause", err: &spec.Error{Kind: spec.ErrUnavailable, Detail: "Busy.", Err: errors.New("db")}, status: 503, logged: true,
			body: `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"Busy."}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs.Reset()
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			r := httptest.NewRequest(http.MethodGet, "/x", nil).WithContext(context.WithValue(ctx, requestIDKey{}, "r1"))
			w := httptest.NewRecorder()
			WriteError(w, r, tc.err, style)
			require.Equal(t, tc.status, w.Code)
			require.JSONEq(t, tc.body, w.Body.String())
			require.True(t, json.Valid(w.Body.Bytes()))
			for k, v := range tc.header {
				require.Equal(t, v, w.Header().Values(k), k)
			}
			require.NotContains(t, w.Body.String(), "secret words")
			require.Equal(t, tc.logged, logs.Len() > 0, logs.String())
			if tc.logged {
				require.Contains(t, logs.String(), "request_id=r1")
			}
		})
	}
}

func TestWriteErrorKeepsRetryAfter(t *testing.T) {
	style := &ErrorStyle{Logger: slog.New(slog.DiscardHandler), RetryAfter: "1"}
	r := httptest.NewRequest(http.MethodGet, "/x", nil)
	w := httptest.NewRecorder()
	w.Header().Set("Retry-After", "30")
	WriteError(w, r, spec.Errorf(spec.ErrUnavailable, "A sync is running."), style)
	require.Equal(t, "30", w.Header().Get("Retry-After"))
}
