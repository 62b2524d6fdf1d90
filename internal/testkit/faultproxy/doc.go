// Package faultproxy is a fault-injecting HTTP reverse proxy to put in front
// of a provider of the AI usage data interface, so that tests can prove a
// consumer survives a hostile network: server errors, rate limits, connection
// resets, hangs, truncated bodies and a rejected page cursor.
//
// [Listen] starts a proxy on a loopback port; point the consumer at its URL:
//
//	target, _ := url.Parse(provider.URL)
//	srv, err := faultproxy.Listen(faultproxy.Config{
//		Target: target,
//		Seed:   42,
//		Faults: faultproxy.Faults{Error5xx: 0.1, RateLimit: 0.1, Reset: 0.05, Truncate: 0.05},
//		// fault the conversation list only
//		Only:             func(r *http.Request) bool { return r.URL.Path == "/conversations" },
//		RejectCursorOnce: true,
//	})
//	if err != nil {
//		return err
//	}
//	defer srv.Close()
//
//	syncWith(srv.URL) // the consumer must retry its way through
//	srv.Proxy.SetFaults(faultproxy.Faults{})
//	syncWith(srv.URL) // a final clean sync must find nothing left to fetch
//	fmt.Printf("%+v\n", srv.Proxy.Stats())
//
// Requests that are not faulted are forwarded by [httputil.ReverseProxy]
// unchanged: method, path and query, end-to-end headers (Authorization and
// X-API-Key included), status, headers and body bytes. The client's
// Accept-Encoding goes to the target as is and the proxy never decompresses,
// so a gzip body passes through as the target wrote it. A [Proxy] is an
// [http.Handler] too, built by [New], for a server of your own.
//
// Which request meets which fault follows from [Config.Seed]: with requests
// arriving one at a time, the same seed gives the same faults. [Proxy.Stats]
// counts them.
package faultproxy
