package faultproxy

import (
	"io"
	"log"
	"net"
	"net/http"
	"time"
)

// Server is a [Proxy] served over HTTP/1.1 on a loopback port, started by
// [Listen].
type Server struct {
	// URL is the proxy's base URL, such as "http://127.0.0.1:41234", with no
	// trailing slash. Point the consumer at it instead of the target.
	URL string
	// Proxy is the running proxy, for [Proxy.Stats] and [Proxy.SetFaults].
	Proxy *Proxy

	srv  *http.Server
	done chan struct{}
}

// Listen builds a [Proxy] from cfg, as [New] does, and serves it on
// 127.0.0.1 on a free port until [Server.Close].
func Listen(cfg Config) (*Server, error) {
	p, err := New(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{
		URL:   "http://" + ln.Addr().String(),
		Proxy: p,
		srv: &http.Server{
			Handler:           p,
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          log.New(io.Discard, "", 0),
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // http.ErrServerClosed after Close
	}()
	return s, nil
}

// Close stops the server: it closes the listener and every client
// connection, which ends hanging requests, then the proxy's idle connections
// to the target. It does not wait for requests still being forwarded. Close
// suits t.Cleanup and may be called more than once.
func (s *Server) Close() {
	_ = s.srv.Close()
	<-s.done
	s.Proxy.CloseIdleConnections()
}
