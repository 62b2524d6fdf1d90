package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

func TestReadPage(t *testing.T) {
	t.Parallel()
	ok := []struct {
		name   string
		body   string
		n      int
		more   bool
		cursor string
	}{
		{"nextCursor null", `{"data":[],"hasMore":false,"nextCursor":null}`, 0, false, ""},
		{"nextCursor left out", `{"data":[],"hasMore":false}`, 0, false, ""},
		{"records, a cursor, an extra member and spaces", ` {"data":[{"id":"a"},{"id":"b"}],"hasMore":true,"nextCursor":"c1","extra":{"x":[1]}} `, 2, true, "c1"},
		{"a final newline", "{\"data\":[1],\"hasMore\":false,\"nextCursor\":null}\n", 1, false, ""},
	}
	for _, c := range ok {
		t.Run("accepts "+c.name, func(t *testing.T) {
			p, err := readPage([]byte(c.body))
			require.NoError(t, err, c.body)
			require.Len(t, p.Data, c.n, c.body)
			require.Equal(t, c.more, p.HasMore, c.body)
			require.Equal(t, c.cursor, p.cursor(), c.body)
		})
	}
	bad := []struct{ name, body, want string }{
		{"data null", `{"data":null,"hasMore":false,"nextCursor":null}`, `"data" is null, not an array`},
		{"data missing", `{"hasMore":false}`, `"data" is missing`},
		{"data an object", `{"data":{},"hasMore":false}`, `"data" is an object`},
		{"Data capitalised", `{"Data":[],"hasMore":false}`, `"data" is missing`},
		{"HasMore capitalised", `{"data":[],"HasMore":false}`, `"hasMore" is missing`},
		{"hasMore missing", `{"data":[]}`, `"hasMore" is missing`},
		{"hasMore a string", `{"data":[],"hasMore":"false"}`, `"hasMore" is a string, not a boolean`},
		{"hasMore null", `{"data":[],"hasMore":null}`, `"hasMore" is null, not a boolean`},
		{"nextCursor a number", `{"data":[],"hasMore":false,"nextCursor":0}`, `"nextCursor" is a number`},
		{"nextCursor an object", `{"data":[],"hasMore":false,"nextCursor":{}}`, `"nextCursor" is an object`},
		{"data twice", `{"data":[1],"hasMore":false,"data":[]}`, `"data" appears twice`},
		{"a second object", `{"data":[],"hasMore":false} {"data":[]}`, "data after the JSON object"},
		{"trailing bytes", `{"data":[],"hasMore":false}x`, "data after the JSON object"},
		{"an array", `[]`, "an array, not a JSON object"},
		{"null", `null`, "null, not a JSON object"},
		{"an empty body", ``, "not JSON"},
		{"a truncated object", `{"data":[],"hasMore":false`, "not JSON"},
		{"invalid UTF-8", "{\"data\":[\"\xff\"],\"hasMore\":false}", "not valid UTF-8"},
		{"a misspelt literal", `{"data":[],"hasMore":tru}`, "not JSON"},
		{"a trailing comma", `{"data":[1,],"hasMore":false}`, "not JSON"},
	}
	for _, c := range bad {
		t.Run("rejects "+c.name, func(t *testing.T) {
			_, err := readPage([]byte(c.body))
			require.Error(t, err, c.body)
			require.Contains(t, err.Error(), c.want, c.body)
		})
	}
}

// FuzzReadPage checks readPage against the envelope schema: a page it
// accepts is a valid envelope as far as types go, and a body the schema
// accepts, in UTF-8 and with no member given twice, is one it accepts.
func FuzzReadPage(f *testing.F) {
	for _, s := range []string{
		`{"data":[],"hasMore":false,"nextCursor":null}`,
		`{"data":[{"id":"a"}],"hasMore":true,"nextCursor":"c"}`,
		`{"data":null,"hasMore":false}`,
		`{"data":[],"hasMore":false,"data":[]}`,
		`{"data":[],"hasMore":"true"}`,
		`{"data":[],"hasMore":false,"nextCursor":0}`,
		`{"data":[],"hasMore":false} []`,
		`[{"data":[]}]`,
		`{"data":[],"hasMore":false,"nextCursor":"\u00e9\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := readPage(body)
		findings, verr := spec.Validate("list-envelope", body)
		typeFinding := false
		for _, fd := range findings {
			// hasMore and nextCursor disagreeing is ENV-03's, not a type.
			if fd.Pointer != "/nextCursor" {
				typeFinding = true
			}
		}
		if err == nil {
			require.NoError(t, verr, "readPage accepted what is not JSON: %q", body)
			require.False(t, typeFinding, "readPage accepted %q; the schema says %v", body, findings)
			require.NotNil(t, p.Data, "data is never nil once accepted")
			return
		}
		if verr == nil && len(findings) == 0 && !strings.Contains(err.Error(), "twice") && !strings.Contains(err.Error(), "UTF-8") && json.Valid(body) {
			t.Fatalf("the schema accepts %q but readPage says %v", body, err)
		}
	})
}

// TestCredentialsMaskedWhereSent: a one-letter token is masked in the
// headers of the curl line and in query strings, never in prose.
func TestCredentialsMaskedWhereSent(t *testing.T) {
	t.Parallel()
	s := newSession(Config{BaseURL: "http://h", Token: "h"})
	ex := &exchange{Method: "GET", URL: "http://h/conversations?access_token=h&limit=1",
		Header: map[string][]string{"Authorization": {"Bearer h"}, "X-Api-Key": {"h"}}, Err: errTest}
	s.record(ex)
	c := ex.curl()
	require.Contains(t, c, "http://h/conversations?access_token=$TOKEN&limit=1")
	require.Contains(t, c, `"Authorization: Bearer $TOKEN"`)
	require.Contains(t, c, `"X-Api-Key: $TOKEN"`)
	require.NotContains(t, c, "$TOKEN$TOKEN")
	require.Equal(t, "the http host has no answer", ex.Err.Error(), "prose is not searched for the token's text")
}

var errTest = testErr("the http host has no answer")

type testErr string

func (e testErr) Error() string { return string(e) }

// TestWalkPageCapEvidence: a walk stopped by the page cap blames its last
// page (checks take evidence from it).
func TestWalkPageCapEvidence(t *testing.T) {
	t.Parallel()
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":[{"id":"r%d","updatedAt":"2026-01-01T00:00:00.000Z"}],"hasMore":true,"nextCursor":"c%d"}`, n, n)
	}))
	t.Cleanup(srv.Close)
	cfg, err := (&Config{BaseURL: srv.URL, Token: "t", PageCap: 3, MaxRate: 1000}).withDefaults()
	require.NoError(t, err)
	w := newSession(cfg).walkList(t.Context(), Conversations, nil, 1)
	require.Contains(t, w.Problem, "page cap")
	require.NotNil(t, w.Ex)
	require.Len(t, w.Sizes, 3)
	_, refused := w.stoppedEarly()
	require.False(t, refused)
}
