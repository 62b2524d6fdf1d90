package faultproxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/aiusage/kit/internal/testkit/faultproxy"
)

func ExampleListen() {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":[],"hasMore":false,"nextCursor":null}`)
	}))
	defer provider.Close()
	target, err := url.Parse(provider.URL)
	if err != nil {
		panic(err)
	}

	srv, err := faultproxy.Listen(faultproxy.Config{
		Target: target,
		Faults: faultproxy.Faults{RateLimit: 1}, // every request...
		After:  1,                               // ...but the first
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	status := func() int {
		resp, err := http.Get(srv.URL + "/conversations")
		if err != nil {
			panic(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	fmt.Println(status(), status())
	srv.Proxy.SetFaults(faultproxy.Faults{}) // a clean run from now on
	fmt.Println(status())
	fmt.Printf("%+v\n", srv.Proxy.Stats())
	// Output:
	// 200 429
	// 200
	// {Requests:3 Passed:2 RejectCursor:0 Error5xx:0 RateLimit:1 Reset:0 Hang:0 Truncate:0}
}
