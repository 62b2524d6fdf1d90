package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/infra/httpclient"
	"github.com/aiusage/kit/provider"
)

// errMissing is a file the export does not have (404, no such file).
var errMissing = errors.New("not found")

// errLarger is a file larger than the bound get was given.
var errLarger = errors.New("larger than the bound")

// location is where an export is read from.
type location interface {
	// get returns the file at rel, a slash-separated path below the root,
	// or an error wrapping errMissing. A file larger than max bytes is an
	// error wrapping errLarger, read no further than max+1 bytes.
	get(ctx context.Context, rel string, max int64) ([]byte, error)
	// retries reports how often a failed or corrupt read is tried again.
	retries() int
	// retry reports retry n (0 for the first) of a read that failed with
	// err (status: its answer's, 0 for none; retryAfter: -1 for none), and
	// waits before it.
	retry(ctx context.Context, n int, status int, retryAfter time.Duration, err error) error
	String() string
}

// ParseURL checks where an export is read from and returns the directory
// (for an absolute path or a file:// URL) or the base URL (https, or http to
// a loopback address: the token would otherwise travel in clear). The error
// says what is wrong.
func ParseURL(raw string) (dir string, base *url.URL, err error) {
	if strings.TrimSpace(raw) == "" {
		return "", nil, errors.New("the export's location is empty: give an absolute directory, a file:// URL or an https:// base address")
	}
	if filepath.IsAbs(raw) {
		return filepath.Clean(raw), nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", nil, fmt.Errorf("the export's location %q is neither an absolute directory nor a URL: %v", raw, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return "", nil, fmt.Errorf("file URL %q names host %q: only local files are read", raw, u.Host)
		}
		if u.Path == "" || !path.IsAbs(u.Path) {
			return "", nil, fmt.Errorf("file URL %q has no absolute path", raw)
		}
		return filepath.Clean(filepath.FromSlash(u.Path)), nil, nil
	case "https":
	case "http":
		if !loopback(u.Hostname()) {
			return "", nil, fmt.Errorf("http URL %q is not a loopback address: use https", raw)
		}
	case "":
		return "", nil, fmt.Errorf("the export's location %q is relative: give an absolute directory, a file:// URL or an https:// base address", raw)
	default:
		return "", nil, fmt.Errorf("the export's location %q has scheme %q: want an absolute directory, file://, https:// or loopback http://", raw, u.Scheme)
	}
	if u.Host == "" {
		return "", nil, fmt.Errorf("URL %q has no host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", nil, fmt.Errorf("URL %q has a query or fragment: give the export's base address", raw)
	}
	if u.User != nil {
		return "", nil, fmt.Errorf("URL %q carries credentials: give the token separately", raw)
	}
	return "", u, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// dirLocation reads an export from directory sub of root. Every file is
// opened through os.OpenRoot(root), so that neither a symbolic link nor ".."
// leads out of root: root is Config.Root when set, the export's directory
// itself otherwise.
type dirLocation struct{ root, sub, shown string }

func (d dirLocation) String() string { return d.shown }
func (d dirLocation) retries() int   { return 0 }

// retry is never called: a directory's reads are not retried.
func (d dirLocation) retry(context.Context, int, int, time.Duration, error) error { return nil }

func (d dirLocation) get(_ context.Context, rel string, max int64) ([]byte, error) {
	if !fs.ValidPath(rel) {
		return nil, fmt.Errorf("bad path %q", rel)
	}
	root, err := os.OpenRoot(d.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", rel, errMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w: %w", rel, provider.ErrUnavailable, err)
	}
	defer root.Close()
	f, err := root.Open(filepath.Join(d.sub, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", rel, errMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w: %w", rel, provider.ErrUnavailable, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s: %w: not a regular file", rel, provider.ErrUnavailable)
	} else if err == nil && st.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, %w of %d", rel, st.Size(), errLarger, max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w: %w", rel, provider.ErrUnavailable, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w of %d bytes", rel, errLarger, max)
	}
	return b, nil
}

// httpLocation reads an export from a base URL, retrying what every
// transport of the consumer retries (httpclient.Transient: 408, 429, 5xx but
// 501, network errors, cut bodies) with the same back-off, honouring a
// Retry-After.
type httpLocation struct {
	base    *url.URL
	token   string
	client  *http.Client
	tries   int
	backoff *httpclient.Backoff
	sleep   func(context.Context, time.Duration) error
	now     func() time.Time
	onRetry func(consumer.Retry)
}

func (h *httpLocation) String() string { return h.base.Redacted() }
func (h *httpLocation) retries() int   { return h.tries }

// resourceKey is the context key of the resource a read is for: it names
// the retries reported.
type resourceKey struct{}

// retry reports retry n (0 for the first) after err, a failure without an
// answer's status, and waits before it.
func (h *httpLocation) retry(ctx context.Context, n int, status int, retryAfter time.Duration, err error) error {
	wait := h.backoff.Wait(n, retryAfter)
	if h.onRetry != nil {
		r, _ := ctx.Value(resourceKey{}).(consumer.Resource)
		h.onRetry(consumer.Retry{Resource: r, Attempt: n + 1, Wait: wait, Status: status, Err: err})
	}
	return h.sleep(ctx, wait)
}

func (h *httpLocation) get(ctx context.Context, rel string, max int64) ([]byte, error) {
	if !fs.ValidPath(rel) {
		return nil, fmt.Errorf("bad path %q", rel)
	}
	u := *h.base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + rel
	u.RawPath = ""
	for attempt := 0; ; attempt++ {
		b, status, retryAfter, retry, err := h.once(ctx, u.String(), max)
		if err == nil {
			return b, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !retry || attempt >= h.tries {
			if attempt > 0 {
				return nil, fmt.Errorf("GET %s: %w (after %d attempts)", rel, err, attempt+1)
			}
			return nil, fmt.Errorf("GET %s: %w", rel, err)
		}
		if err := h.retry(ctx, attempt, status, retryAfter, fmt.Errorf("GET %s: %w", rel, err)); err != nil {
			return nil, err
		}
	}
}

// once makes one request. retry reports a failure worth another attempt;
// status is the answer's (0 for a network error or a cut body), retryAfter
// its Retry-After (-1 for none).
func (h *httpLocation) once(ctx context.Context, u string, max int64) (b []byte, status int, retryAfter time.Duration, retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, -1, false, err
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	req.Header.Set("User-Agent", "aiusage-consumer")
	// The checksums are of the stored bytes: ask for them as stored, so
	// that a server which labels a .gz file Content-Encoding: gzip does not
	// have the transport decompress it.
	req.Header.Set("Accept-Encoding", "identity")
	res, err := h.client.Do(req)
	if err != nil {
		// A refused redirect is refused for good: retrying gets the same.
		return nil, 0, -1, httpclient.Transient(0, err, consumer.ErrRedirect), fmt.Errorf("%w: %w", provider.ErrUnavailable, err)
	}
	defer res.Body.Close()
	status = res.StatusCode
	switch {
	case status == http.StatusOK:
	case status == http.StatusNotFound || status == http.StatusGone:
		return nil, status, -1, false, errMissing
	case status == http.StatusUnauthorized:
		return nil, status, -1, false, fmt.Errorf("%w: HTTP %d", provider.ErrUnauthorized, status)
	case status == http.StatusForbidden:
		return nil, status, -1, false, fmt.Errorf("%w: HTTP %d", provider.ErrForbidden, status)
	case httpclient.Transient(status, nil):
		retryAfter = -1
		if d, ok := httpclient.RetryAfter(res.Header.Get("Retry-After"), h.now()); ok {
			retryAfter = d
		}
		return nil, status, retryAfter, true, fmt.Errorf("%w: HTTP %d", provider.ErrUnavailable, status)
	default:
		return nil, status, -1, false, fmt.Errorf("unexpected HTTP %d", status)
	}
	if res.ContentLength > max {
		return nil, status, -1, false, fmt.Errorf("the body is %d bytes, %w of %d", res.ContentLength, errLarger, max)
	}
	b, err = io.ReadAll(io.LimitReader(res.Body, max+1))
	if err != nil {
		return nil, 0, -1, true, fmt.Errorf("%w: the body was cut: %w", provider.ErrUnavailable, err)
	}
	if int64(len(b)) > max {
		return nil, status, -1, false, fmt.Errorf("the body is %w of %d bytes", errLarger, max)
	}
	return b, status, -1, false, nil
}
