package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/spec"
)

func TestRequestID(t *testing.T) {
	var seen string
	h := RequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = RequestIDFrom(r.Context()) }))
	for _, c := range []struct {
		name, sent string
		kept       bool
	}{
		{"sane id kept", "req-1.a:b_c", true},
		{"none", "", false},
		{"space refused", "a b", false},
		{"too long", strings.Repeat("a", 129), false},
		{"longest kept", strings.Repeat("a", 128), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			if c.sent != "" {
				r.Header.Set("X-Request-Id", c.sent)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if got := w.Header().Get("X-Request-Id"); got != seen || got == "" {
				t.Fatalf("echoed %q, handler saw %q", got, seen)
			}
			if (seen == c.sent) != c.kept {
				t.Fatalf("sent %q, got %q; kept want %v", c.sent, seen, c.kept)
			}
		})
	}
	if RequestIDFrom(context.Background()) != "" {
		t.Fatal("an id outside the middleware")
	}
}

func TestAccessLogAndAnnotate(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	h := RequestID(AccessLog(logger)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Annotate(r.Context(), slog.String("key", "k1"))
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte("abc"))
	})))
	r := httptest.NewRequest(http.MethodPost, "/x", nil)
	r.Header.Set("X-Request-Id", "rid")
	h.ServeHTTP(httptest.NewRecorder(), r)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("log %q: %v", buf.String(), err)
	}
	want := map[string]any{"msg": "request", "request_id": "rid", "method": "POST", "path": "/x", "status": 418.0, "bytes": 3.0, "key": "k1"}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("%s = %v, want %v (line %s)", k, line[k], v, buf.String())
		}
	}

	// Off below Info, and Annotate outside the log does nothing.
	buf.Reset()
	quiet := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	AccessLog(quiet)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Annotate(r.Context(), slog.String("key", "k1"))
	})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	if buf.Len() != 0 {
		t.Fatalf("logged at Warn: %s", buf.String())
	}
}

func TestRecoverAndAdapt(t *testing.T) {
	var failed error
	fail := func(w http.ResponseWriter, r *http.Request, err error) {
		failed = err
		w.WriteHeader(http.StatusInternalServerError)
	}
	t.Run("panic is written", func(t *testing.T) {
		failed = nil
		w := httptest.NewRecorder()
		Recover(fail)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })).
			ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != 500 || failed == nil || !strings.Contains(failed.Error(), "boom") {
			t.Fatalf("code %d, err %v", w.Code, failed)
		}
	})
	t.Run("ErrAbortHandler re-raised", func(t *testing.T) {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Fatalf("recovered %v", v)
			}
		}()
		Recover(fail)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })).
			ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	})
	t.Run("error written", func(t *testing.T) {
		failed = nil
		want := errors.New("x")
		Adapt(func(http.ResponseWriter, *http.Request) error { return want }, fail).
			ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		if failed != want {
			t.Fatalf("failed %v", failed)
		}
	})
	t.Run("client gone not written", func(t *testing.T) {
		failed = nil
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)
		Adapt(func(http.ResponseWriter, *http.Request) error { return ctx.Err() }, fail).ServeHTTP(httptest.NewRecorder(), r)
		if failed != nil {
			t.Fatalf("wrote %v", failed)
		}
		// A cancelled context of the server's own (not the request's) is written.
		Adapt(func(http.ResponseWriter, *http.Request) error { return context.Canceled }, fail).
			ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		if failed == nil {
			t.Fatal("a server-side cancellation was dropped")
		}
	})
}

func TestAllowedMethods(t *testing.T) {
	r := chi.NewRouter()
	r.Get("/a", func(http.ResponseWriter, *http.Request) {})
	r.Delete("/a", func(http.ResponseWriter, *http.Request) {})
	r.Post("/b", func(http.ResponseWriter, *http.Request) {})
	for path, want := range map[string]string{"/a": "GET, HEAD, DELETE", "/b": "POST", "/c": ""} {
		t.Run(path, func(t *testing.T) {
			if got := strings.Join(AllowedMethods(r, path), ", "); got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}

func TestReadJSON(t *testing.T) {
	for _, c := range []struct {
		name, ct, body string
		kind           error
		field          string
	}{
		{"json", "application/json", `{"a":1}`, nil, ""},
		{"json with charset", "application/json; charset=utf-8", `{}`, nil, ""},
		{"no content type", "", `{}`, spec.ErrInvalid, "Content-Type"},
		{"text", "text/plain", `{}`, spec.ErrInvalid, "Content-Type"},
		{"too large", "application/json", strings.Repeat(" ", MaxBodyBytes+1), spec.ErrTooLarge, "body"},
		{"largest", "application/json", strings.Repeat(" ", MaxBodyBytes), nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body))
			if c.ct != "" {
				r.Header.Set("Content-Type", c.ct)
			}
			b, err := ReadJSON(httptest.NewRecorder(), r)
			if c.kind == nil {
				if err != nil || string(b) != c.body {
					t.Fatalf("err %v, %d bytes", err, len(b))
				}
				return
			}
			var e *spec.Error
			if !errors.Is(err, c.kind) || !errors.As(err, &e) || e.Fields[0].Field != c.field {
				t.Fatalf("err %v, want kind %v naming %s", err, c.kind, c.field)
			}
		})
	}
}

func TestDecodeJSON(t *testing.T) {
	for _, c := range []struct {
		name, body, field, msg string
	}{
		{"empty", "  ", "body", "is empty"},
		{"not utf-8", "{\"title\":\"\xff\"}", "body", "UTF-8"},
		{"syntax", `{"title":`, "body", "is not valid JSON"},
		{"trailing", `{} {}`, "body", "has data after the JSON value"},
		{"schema", `{"title":5}`, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v map[string]any
			err := DecodeJSON("instruction-create", []byte(c.body), &v)
			var e *spec.Error
			if !errors.Is(err, spec.ErrInvalid) || !errors.As(err, &e) || len(e.Fields) == 0 {
				t.Fatalf("err %v", err)
			}
			if c.field != "" && (e.Fields[0].Field != c.field || !strings.Contains(e.Fields[0].Message, c.msg)) {
				t.Fatalf("fields %+v, want %s: %s", e.Fields, c.field, c.msg)
			}
		})
	}
	t.Run("unknown schema", func(t *testing.T) {
		var v any
		if err := DecodeJSON("no-such-schema", []byte(`{}`), &v); !errors.Is(err, spec.ErrInvalid) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestCredential(t *testing.T) {
	for _, c := range []struct {
		name    string
		headers map[string]string
		bare    bool
		want    string
		present bool
	}{
		{"none", nil, false, "", false},
		{"bearer", map[string]string{"Authorization": "Bearer k1"}, false, "k1", true},
		{"bearer any case", map[string]string{"Authorization": "bEaReR  k1 "}, false, "k1", true},
		{"x-api-key wins", map[string]string{"Authorization": "Bearer k1", "X-API-Key": " k2 "}, false, "k2", true},
		{"empty x-api-key still wins", map[string]string{"Authorization": "Bearer k1", "X-API-Key": ""}, false, "", true},
		{"basic", map[string]string{"Authorization": "Basic abc"}, false, "", true},
		{"bare refused", map[string]string{"Authorization": "k1"}, false, "", true},
		{"bare accepted", map[string]string{"Authorization": "k1"}, true, "k1", true},
		{"blank authorization", map[string]string{"Authorization": "  "}, false, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			for k, v := range c.headers {
				r.Header.Set(k, v)
			}
			got, present := Credential(r, c.bare)
			if got != c.want || present != c.present {
				t.Fatalf("got %q, %v; want %q, %v", got, present, c.want, c.present)
			}
		})
	}
}

func TestWriteJSONAndProblem(t *testing.T) {
	w := httptest.NewRecorder()
	if err := WriteJSON(w, http.StatusCreated, map[string]string{"a": "<b>"}); err != nil {
		t.Fatal(err)
	}
	if w.Code != 201 || w.Body.String() != "{\"a\":\"<b>\"}\n" || w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %q %v", w.Code, w.Body, w.Header())
	}
	if err := WriteJSON(httptest.NewRecorder(), 200, func() {}); err == nil {
		t.Fatal("a func encoded")
	}
	w = httptest.NewRecorder()
	WriteProblem(w, spec.Problem{Type: "about:blank", Title: "Not Found", Status: 404, Detail: "no"})
	if w.Code != 404 || w.Header().Get("Content-Type") != spec.ProblemContentType || !strings.Contains(w.Body.String(), `"detail":"no"`) {
		t.Fatalf("%d %v %q", w.Code, w.Header(), w.Body)
	}
	w = httptest.NewRecorder()
	WriteProblem(w, spec.Problem{Status: 400, Extensions: map[string]any{"f": func() {}}})
	if w.Code != 500 {
		t.Fatalf("an unencodable problem answered %d", w.Code)
	}
}

// FuzzDecodeJSON: any body gives nil or an *spec.Error of kind spec.ErrInvalid
// naming a field, never a panic.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"title":"t"}`, `{"trigger":{"type":"Regex","pattern":"("}}`, `[1,2]`, `{} x`, "\xff", `{"usedBy":[1]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v spec.InstructionCreate
		err := DecodeJSON("instruction-create", body, &v)
		if err == nil {
			return
		}
		var e *spec.Error
		if !errors.Is(err, spec.ErrInvalid) || !errors.As(err, &e) || len(e.Fields) == 0 {
			t.Fatalf("body %q: %v", body, err)
		}
		for _, fld := range e.Fields {
			if fld.Field == "" || fld.Message == "" {
				t.Fatalf("body %q: unnamed field %+v", body, fld)
			}
		}
	})
}
