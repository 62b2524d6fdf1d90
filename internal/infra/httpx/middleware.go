package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/go-chi/chi/v5/middleware"
)

type requestIDKey struct{}

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// RequestID gives every request an id: the client's X-Request-Id when it is
// sane (1 to 128 of A-Z a-z 0-9 . _ : -), else a random one. The id is echoed
// in the X-Request-Id response header; [RequestIDFrom] reads it.
func RequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID.MatchString(id) {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// RequestIDFrom returns the id [RequestID] gave the request whose context ctx
// is, or "".
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// logLine collects what inner handlers add to a request's access log line.
type logLine struct{ attrs []slog.Attr }

type logLineKey struct{}

// Annotate adds attr to the access log line of the request whose context ctx
// is (for example who the credential was). It does nothing outside
// [AccessLog] or when the log is off.
func Annotate(ctx context.Context, attr slog.Attr) {
	if l, ok := ctx.Value(logLineKey{}).(*logLine); ok {
		l.attrs = append(l.attrs, attr)
	}
}

// AccessLog logs one line per request at level Info to logger: request id,
// method, path, status, bytes, duration and what [Annotate] added. It costs
// nothing when logger does not log Info.
func AccessLog(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !logger.Enabled(r.Context(), slog.LevelInfo) {
				next.ServeHTTP(w, r)
				return
			}
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			line := &logLine{}
			next.ServeHTTP(ww, r.WithContext(context.WithValue(r.Context(), logLineKey{}, line)))
			attrs := append([]slog.Attr{
				slog.String("request_id", RequestIDFrom(r.Context())),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", ww.Status()),
				slog.Int("bytes", ww.BytesWritten()),
				slog.Duration("duration", time.Since(start)),
			}, line.attrs...)
			logger.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
		})
	}
}

// ErrorWriter writes err as the answer to r, in the body format of one API.
type ErrorWriter func(w http.ResponseWriter, r *http.Request, err error)

// Recover turns a panic of a handler into an error that fail writes (a
// 500 in every API), so one bad request cannot take the process down.
// http.ErrAbortHandler is re-raised: it is how a handler aborts a response on
// purpose.
func Recover(fail ErrorWriter) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					fail(w, r, fmt.Errorf("panic: %v", v))
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}
