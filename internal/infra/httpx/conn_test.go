package httpx

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// acceptor accepts the connections of a limited listener and holds them
// open, handing each on.
type acceptor struct {
	ln    net.Listener
	conns chan net.Conn
}

func startAcceptor(t *testing.T, c ConnLimits) *acceptor {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a := &acceptor{ln: c.Listener(ln), conns: make(chan net.Conn, 100)}
	t.Cleanup(func() { _ = a.ln.Close() })
	go func() {
		for {
			conn, err := a.ln.Accept()
			if err != nil {
				close(a.conns)
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
			a.conns <- conn
		}
	}()
	return a
}

// dialFrom connects to the acceptor from the local address from (any
// address of 127.0.0.0/8 is the loopback's on Linux).
func (a *acceptor) dialFrom(t *testing.T, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", a.ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// accepted returns the next connection the server accepted, or nil when
// none is accepted within wait.
func (a *acceptor) accepted(wait time.Duration) net.Conn {
	select {
	case c := <-a.conns:
		return c
	case <-time.After(wait):
		return nil
	}
}

// refused reports whether a connection from the local address from is
// reset: the dial or a read fails (rather than times out) within 5 s.
func (a *acceptor) refused(t *testing.T, from string) bool {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", a.ln.Addr().String())
	if err != nil {
		return !errors.Is(err, os.ErrDeadlineExceeded)
	}
	defer c.Close()
	return isResetWithin(t, c, 5*time.Second)
}

// isResetWithin is isReset waiting at most wait.
func isResetWithin(t *testing.T, c net.Conn, wait time.Duration) bool {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(wait)))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// Connections from one address past PerAddress are reset as soon as they
// are accepted; another address is served; a closed connection gives its
// place back.
func TestConnLimitsPerAddress(t *testing.T) {
	t.Parallel()
	a := startAcceptor(t, ConnLimits{PerAddress: 3})
	var held []net.Conn
	for range 3 {
		a.dialFrom(t, "127.0.0.1")
		c := a.accepted(5 * time.Second)
		require.NotNil(t, c, "a connection within the bound is accepted")
		held = append(held, c)
	}
	require.True(t, a.refused(t, "127.0.0.1"), "the fourth connection of the address is reset")
	require.Nil(t, a.accepted(50*time.Millisecond), "and never handed to the server")

	a.dialFrom(t, "127.0.0.2")
	require.NotNil(t, a.accepted(5*time.Second), "another address is served")

	require.NoError(t, held[0].Close())
	a.dialFrom(t, "127.0.0.1")
	require.NotNil(t, a.accepted(5*time.Second), "a closed connection gives its place back")
	_ = held[0].Close() // closing twice gives the place back once
	require.True(t, a.refused(t, "127.0.0.1"), "the address is at its bound again")
}

// Past Total, a connection waits (in the accept backlog) until one closes,
// and is then served; closing the listener ends the wait.
func TestConnLimitsTotal(t *testing.T) {
	t.Parallel()
	a := startAcceptor(t, ConnLimits{Total: 2})
	a.dialFrom(t, "127.0.0.1")
	c1 := a.accepted(5 * time.Second)
	require.NotNil(t, c1)
	a.dialFrom(t, "127.0.0.2")
	require.NotNil(t, a.accepted(5*time.Second))
	waiting := a.dialFrom(t, "127.0.0.3")
	require.Nil(t, a.accepted(100*time.Millisecond), "a third connection waits")
	require.False(t, isResetWithin(t, waiting, 50*time.Millisecond), "without being reset")
	require.NoError(t, c1.Close())
	require.NotNil(t, a.accepted(5*time.Second), "and is served once one closes")

	// At the bound again: Close ends the waiting Accept.
	a.dialFrom(t, "127.0.0.4")
	require.NoError(t, a.ln.Close())
	select {
	case _, ok := <-a.conns:
		require.False(t, ok, "Accept returned a connection after Close")
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waits after Close")
	}
}

func TestConnLimitsOff(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	require.Same(t, ln, ConnLimits{}.Listener(ln), "no bound: the listener as it is")
}

func TestDefaultMaxConnections(t *testing.T) {
	t.Parallel()
	n := DefaultMaxConnections()
	require.GreaterOrEqual(t, n, 1)
	require.LessOrEqual(t, n, MaxDefaultConnections)
	if lim, ok := openFileLimit(); ok {
		require.LessOrEqual(t, uint64(n), lim-min(lim/4, connReserve), "a reserve of descriptors is left")
	}
}
