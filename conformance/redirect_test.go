package conformance_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aiusage/kit/conformance"
)

// A client the caller gives the suite does not carry the token to another
// origin when the provider redirects there, though the client itself
// follows every redirect.
func TestCallersClientKeepsTokenToOrigin(t *testing.T) {
	t.Parallel()
	var leaked, asked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization")+r.Header.Get("X-API-Key") != "" {
			leaked.Add(1)
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(other.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	for _, run := range []func() error{
		func() error {
			_, err := conformance.Run(t.Context(), conformance.Config{BaseURL: srv.URL, Token: "tok", Client: &http.Client{}})
			return err
		},
		func() error {
			_, err := conformance.RunExport(t.Context(), conformance.ExportConfig{Location: srv.URL, Token: "tok", Client: &http.Client{}})
			return err
		},
	} {
		_ = run() // the provider fails the suite; what matters is where the token went
	}
	if asked.Load() == 0 {
		t.Fatal("the suite asked the provider nothing")
	}
	if n := leaked.Load(); n != 0 {
		t.Fatalf("the other origin received the token %d times", n)
	}
}
