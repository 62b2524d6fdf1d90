package httpx

import (
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/aiusage/kit/internal/infra/ident"
)

// Default bounds of [ConnLimits].
const (
	// DefaultMaxConnectionsPerAddress is the default of
	// ConnLimits.PerAddress.
	DefaultMaxConnectionsPerAddress = 256
	// MaxDefaultConnections is the most [DefaultMaxConnections] returns,
	// however high the open-file limit: past it, the memory of idle and
	// slow connections (some 10-20 KiB each) is the bound that matters.
	MaxDefaultConnections = 16384
	// connReserve is the number of file descriptors [DefaultMaxConnections]
	// leaves to the process for everything but its clients' connections:
	// database connections, outgoing requests (webhooks, syncs, the
	// embeddings endpoint), files, the metrics listener.
	connReserve = 1024
)

// DefaultMaxConnections is the default of ConnLimits.Total: the process's
// open-file limit (RLIMIT_NOFILE, which the Go runtime raises to its hard
// limit at start) less a reserve of 1,024 descriptors (a quarter of the
// limit when that is smaller than 4,096) for the process's own files and
// connections, and at most [MaxDefaultConnections]. Where the limit cannot
// be read it is [MaxDefaultConnections].
func DefaultMaxConnections() int {
	n, ok := openFileLimit()
	if !ok {
		return MaxDefaultConnections
	}
	reserve := uint64(connReserve)
	if n < 4*connReserve {
		reserve = n / 4
	}
	return int(max(1, min(n-reserve, MaxDefaultConnections)))
}

// ConnLimits bound the connections a server keeps open, so that clients
// cannot take every file descriptor of the process (connections that send
// nothing, or their request slowly, cost a descriptor each) nor crowd out
// the other clients. They count connections at the listener, before any
// request is read: an address there is the peer's, never one a header
// names, so behind a reverse proxy or a load balancer every client is the
// proxy's address (set PerAddress to 0, or above the proxy's own pool, and
// bound clients at the proxy). A zero or negative field is no bound.
type ConnLimits struct {
	// Total bounds the connections open at once. Past it, the listener
	// accepts no more until one closes: new connections wait in the
	// kernel's accept backlog (net.core.somaxconn), which costs the process
	// no file descriptor, and are served in turn; when the backlog is full
	// the kernel drops new ones (their client retries its SYN). Waiting
	// rather than refusing lets a burst of clients through late rather than
	// failing. [DefaultMaxConnections] is the usual value.
	Total int
	// PerAddress bounds the connections open at once from one client
	// address: an IPv4 address, or the /64 network of an IPv6 address (the
	// block one host is usually given). A connection past it is reset as
	// soon as it is accepted, so that one client cannot fill Total.
	// [DefaultMaxConnectionsPerAddress] is the usual value.
	PerAddress int
	// Logger, when not nil, logs the connections reset by PerAddress: the
	// first at once, then at most one line a minute with their count.
	Logger *slog.Logger
}

// Listener returns ln with the limits of c applied to the connections it
// accepts. A connection counts until it is closed. Closing the returned
// listener closes ln and ends an Accept that waits for Total.
func (c ConnLimits) Listener(ln net.Listener) net.Listener {
	if c.Total <= 0 && c.PerAddress <= 0 {
		return ln
	}
	l := &limitListener{Listener: ln, perAddr: c.PerAddress, log: c.Logger,
		byAddr: map[string]int{}, done: make(chan struct{})}
	if c.Total > 0 {
		l.sem = make(chan struct{}, c.Total)
	}
	return l
}

type limitListener struct {
	net.Listener
	sem     chan struct{} // a token per open connection; nil: no total
	perAddr int
	log     *slog.Logger

	mu       sync.Mutex
	byAddr   map[string]int
	refused  int       // connections reset since the last log line
	lastLog  time.Time // of the last log line of refused connections
	done     chan struct{}
	closeErr error
	closed   sync.Once
}

// Accept waits for a free place in Total, then accepts connections until one
// is within PerAddress, resetting the others.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		if l.sem != nil {
			select {
			case l.sem <- struct{}{}:
			case <-l.done:
				return nil, net.ErrClosed
			}
		}
		c, err := l.Listener.Accept()
		if err != nil {
			l.release()
			return nil, err
		}
		key := ident.AddressKey(c.RemoteAddr().String())
		if !l.take(key) {
			l.release()
			reset(c)
			continue
		}
		return &limitConn{Conn: c, l: l, key: key}, nil
	}
}

// Close closes the listener and ends an Accept waiting for a place.
func (l *limitListener) Close() error {
	l.closed.Do(func() {
		close(l.done)
		l.closeErr = l.Listener.Close()
	})
	return l.closeErr
}

// take counts a connection of key, unless key has PerAddress already.
func (l *limitListener) take(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perAddr > 0 && l.byAddr[key] >= l.perAddr {
		l.refusedLocked(key)
		return false
	}
	l.byAddr[key]++
	return true
}

// refusedLocked counts a connection of key reset, and logs the count at
// most once a minute; l.mu is held.
func (l *limitListener) refusedLocked(key string) {
	l.refused++
	if l.log == nil {
		return
	}
	if now := time.Now(); now.Sub(l.lastLog) >= time.Minute {
		l.log.Warn("connections reset: too many open from one client address",
			"reset", l.refused, "last_address", key, "max_per_address", l.perAddr)
		l.refused, l.lastLog = 0, now
	}
}

// drop gives back the place of a connection of key.
func (l *limitListener) drop(key string) {
	l.mu.Lock()
	if l.byAddr[key]--; l.byAddr[key] <= 0 {
		delete(l.byAddr, key)
	}
	l.mu.Unlock()
	l.release()
}

func (l *limitListener) release() {
	if l.sem != nil {
		<-l.sem
	}
}

// reset closes c at once, with a TCP reset rather than an orderly close,
// so that neither side keeps the connection's state.
func reset(c net.Conn) {
	if tc, ok := c.(interface{ SetLinger(int) error }); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// limitConn is a connection counted by its listener until it is closed.
type limitConn struct {
	net.Conn
	l    *limitListener
	key  string
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.drop(c.key) })
	return err
}
