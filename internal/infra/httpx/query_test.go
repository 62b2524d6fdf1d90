package httpx_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/httpx"
)

func TestParseQuery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw     string
		param   string // "" when the query parses
		message string // a part of the message
	}{
		{raw: ""},
		{raw: "cursor=abc&limit=5"},
		{raw: "a=%41&&b"},
		{raw: "cursor=%%%", param: "cursor", message: `"%%%"`},
		{raw: "limit=5&cursor=%zz", param: "cursor", message: "percent-encoding"},
		{raw: "c%75rsor=%", param: "cursor", message: "percent-encoding"},
		{raw: "%zz=1", param: "query", message: `parameter name "%zz"`},
		{raw: "a=1;b=2", param: "query", message: "semicolon"},
		{raw: "ok=1&x=" + strings.Repeat("%", 100), param: "x", message: `"...;`},
	} {
		values, err := httpx.ParseQuery(tc.raw)
		want, wantErr := url.ParseQuery(tc.raw)
		if tc.param == "" {
			require.NoError(t, err, tc.raw)
			require.NoError(t, wantErr, tc.raw)
			require.Equal(t, want, values, tc.raw)
			continue
		}
		require.Error(t, wantErr, tc.raw)
		var qe *httpx.QueryError
		require.True(t, errors.As(err, &qe), "%q: %v", tc.raw, err)
		require.Equal(t, tc.param, qe.Param, tc.raw)
		require.Contains(t, qe.Message, tc.message, tc.raw)
		require.Less(t, len(qe.Message), 200, "a message quotes at most a bounded part of the query")
	}
}

func TestStrictQuery(t *testing.T) {
	t.Parallel()
	var reached []string
	h := httpx.StrictQuery(func(w http.ResponseWriter, r *http.Request, err *httpx.QueryError) {
		http.Error(w, err.Param+": "+err.Message, http.StatusBadRequest)
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = append(reached, r.URL.Query().Get("cursor"))
	}))
	for _, tc := range []struct {
		target string
		status int
		body   string
	}{
		{target: "/list?cursor=abc", status: http.StatusOK},
		{target: "/list", status: http.StatusOK},
		{target: "/list?cursor=%%%", status: http.StatusBadRequest, body: "cursor: "},
		{target: "/list?limit=2;cursor=x", status: http.StatusBadRequest, body: "query: "},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, tc.target, nil))
		require.Equal(t, tc.status, w.Code, tc.target)
		require.True(t, strings.HasPrefix(w.Body.String(), tc.body), "%s: %s", tc.target, w.Body)
	}
	require.Equal(t, []string{"abc", ""}, reached, "only well-formed queries reach the handler")
}

// FuzzParseQuery checks that ParseQuery refuses exactly what url.ParseQuery
// refuses, returns the same values otherwise, and names a parameter the
// query holds.
func FuzzParseQuery(f *testing.F) {
	for _, seed := range []string{"", "cursor=%%%", "a=1&b=2", "a=1;b=2", "%zz=1", "a%3Db=%2", "&&=&", "x=%e2%82", "k=%"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		values, err := httpx.ParseQuery(raw)
		want, wantErr := url.ParseQuery(raw)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: ParseQuery error %v, url.ParseQuery error %v", raw, err, wantErr)
		}
		if err == nil {
			if len(values) != len(want) {
				t.Fatalf("%q: %v, want %v", raw, values, want)
			}
			return
		}
		var qe *httpx.QueryError
		if !errors.As(err, &qe) || qe.Param == "" || qe.Message == "" || qe.Message == "cannot be parsed" {
			t.Fatalf("%q: %#v does not say what is wrong", raw, err)
		}
		if qe.Param != "query" {
			if _, ok := wantKey(raw, qe.Param); !ok {
				t.Fatalf("%q: blames %q, which it does not hold", raw, qe.Param)
			}
		}
	})
}

// wantKey reports whether raw has a pair whose decoded name is key.
func wantKey(raw, key string) (string, bool) {
	for _, pair := range strings.Split(raw, "&") {
		k, _, _ := strings.Cut(pair, "=")
		if d, err := url.QueryUnescape(k); err == nil && d == key {
			return d, true
		}
	}
	return "", false
}
