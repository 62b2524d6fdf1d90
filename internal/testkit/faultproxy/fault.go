package faultproxy

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
)

// problemContentType is the media type of an RFC 9457 problem details body.
const problemContentType = "application/problem+json"

// maxTruncateBody bounds the target body a Truncate fault reads into memory;
// a longer body is not answered at all.
const maxTruncateBody = 64 << 20

// problem is an RFC 9457 problem details body.
type problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
}

// writeProblem answers with a problem+json body. The caller sets any extra
// header first.
func writeProblem(w http.ResponseWriter, r *http.Request, status int, detail string) {
	b, err := json.Marshal(problem{
		Type:     "about:blank",
		Title:    http.StatusText(status),
		Status:   status,
		Detail:   detail,
		Instance: r.URL.Path,
	})
	if err != nil { // cannot happen: only strings and an int
		panic(err)
	}
	writeBody(w, status, problemContentType, b)
}

func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

var error5xxDetail = map[int]string{
	http.StatusInternalServerError: "The server encountered an unexpected condition.",
	http.StatusBadGateway:          "The upstream server sent an invalid response.",
	http.StatusServiceUnavailable:  "The service is temporarily unavailable.",
}

// serveError5xx answers 500, 502 or 503, half the time with a problem+json
// body and half the time with a plain-text one, as a load balancer would.
func serveError5xx(w http.ResponseWriter, r *http.Request, rng *rand.Rand) {
	status := [...]int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable}[rng.IntN(3)]
	if status == http.StatusServiceUnavailable && rng.IntN(2) == 0 {
		w.Header().Set("Retry-After", strconv.Itoa(rng.IntN(2)))
	}
	if rng.IntN(2) == 0 {
		writeProblem(w, r, status, error5xxDetail[status])
		return
	}
	writeBody(w, status, "text/plain; charset=utf-8", []byte(strconv.Itoa(status)+" "+http.StatusText(status)+"\n"))
}

// serveRateLimit answers 429 with Retry-After 0 or 1.
func serveRateLimit(w http.ResponseWriter, r *http.Request, rng *rand.Rand) {
	after := rng.IntN(2)
	w.Header().Set("Retry-After", strconv.Itoa(after))
	writeProblem(w, r, http.StatusTooManyRequests, "Rate limit exceeded; retry after "+strconv.Itoa(after)+" s.")
}

// abort closes the client connection without writing anything more; hard
// asks for a TCP reset rather than an orderly close. Whatever the handler
// wrote before must have been flushed.
func abort(w http.ResponseWriter, hard bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// HTTP/2, or a ResponseWriter that cannot be hijacked: let the
		// server reset the stream or close the connection.
		panic(http.ErrAbortHandler)
	}
	if hard {
		c := conn
		if nc, ok := c.(interface{ NetConn() net.Conn }); ok { // TLS
			c = nc.NetConn()
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close sends RST
		}
	}
	_ = conn.Close()
}

// truncate forwards r, then sends the target's status and headers but only
// part of its body, and closes the connection.
func (p *Proxy) truncate(w http.ResponseWriter, r *http.Request, rng *rand.Rand) {
	resp, err := p.transport.RoundTrip(p.outgoing(r))
	if err != nil {
		abort(w, false)
		return
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTruncateBody+1))
	_ = resp.Body.Close()
	if err != nil || len(body) == 0 || len(body) > maxTruncateBody {
		abort(w, false)
		return
	}
	cut := cutPoint(body, resp.Header.Get("Content-Encoding"), rng)

	h := w.Header()
	for k, vv := range resp.Header {
		h[k] = append([]string(nil), vv...)
	}
	removeHopByHop(h)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body[:cut])
	_ = http.NewResponseController(w).Flush()
	abort(w, false)
}

// outgoing builds the request to the target the way the forwarding
// [httputil.ReverseProxy] does: same method, path under the target's,
// query and end-to-end headers.
func (p *Proxy) outgoing(r *http.Request) *http.Request {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Close = false
	if r.ContentLength == 0 {
		out.Body = nil
	}
	removeHopByHop(out.Header)
	for _, k := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		out.Header.Del(k)
	}
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header.Set("User-Agent", "") // no Go default, as ReverseProxy
	}
	(&httputil.ProxyRequest{In: r, Out: out}).SetURL(p.target)
	return out
}

// hopByHop lists the headers that concern one connection only (RFC 9110,
// section 7.6.1).
var hopByHop = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopByHop {
		h.Del(k)
	}
}

// cutPoint returns how many bytes of body to send: fewer than len(body) and,
// for identity and gzip bodies, too few to carry the content's last non-blank
// byte, so that even a client that stops reading after one JSON value sees an
// error instead of a complete document. A body in another encoding is cut in
// its first half.
func cutPoint(body []byte, encoding string, rng *rand.Rand) int {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "", "identity":
		return randIn(1, lastNonBlank(body), rng)
	case "gzip", "x-gzip":
		full, err := gunzip(body)
		if err != nil { // not gzip after all: the length check alone must do
			return randIn(1, len(body)-1, rng)
		}
		last := lastNonBlank(full)
		n := randIn(1, len(body)-1, rng)
		for n > 0 {
			got, _ := gunzip(body[:n])
			if len(got) <= last {
				break
			}
			n = n * 3 / 4
		}
		return n
	default:
		return randIn(1, len(body)/2, rng)
	}
}

// randIn returns a number in [lo, hi], or max(hi, 0) when hi < lo.
func randIn(lo, hi int, rng *rand.Rand) int {
	if hi < lo {
		return max(hi, 0)
	}
	return lo + rng.IntN(hi-lo+1)
}

// lastNonBlank returns the index of the last byte of b that is not JSON
// white space, or -1.
func lastNonBlank(b []byte) int {
	return bytes.LastIndexFunc(b, func(r rune) bool {
		return r != ' ' && r != '\t' && r != '\n' && r != '\r'
	})
}

// gunzip decompresses b, returning what it could decode before any error.
func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}
