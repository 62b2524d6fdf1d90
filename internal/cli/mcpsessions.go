package cli

import (
	"flag"
	"time"

	"github.com/aiusage/kit/mcp"
)

// mcpSessionFlags are the flags of the MCP endpoints' sessions, on the
// commands that serve MCP over HTTP (provider serve, service serve).
type mcpSessionFlags struct {
	on          bool
	idleTimeout time.Duration
	max         int
}

func (m *mcpSessionFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&m.on, "mcp-sessions", false, "give MCP clients sessions (Mcp-Session-Id), kept in this process; by default MCP is stateless and keeps nothing between requests")
	fs.DurationVar(&m.idleTimeout, "mcp-session-idle-timeout", mcp.DefaultSessionIdleTimeout, "with --mcp-sessions, how long a session lives without a request; then it is answered 404")
	fs.IntVar(&m.max, "mcp-max-sessions-per-credential", mcp.DefaultMaxSessionsPerCredential, "with --mcp-sessions, most sessions of one token or API key; a new one ends the one used least recently")
}

// options checks the flags and returns the MCP server's options. A bad flag
// is a usage error naming the command cmd.
func (m *mcpSessionFlags) options(cmd string) ([]mcp.Option, error) {
	if m.idleTimeout <= 0 {
		return nil, usagef("%s: --mcp-session-idle-timeout must be positive, got %s", cmd, m.idleTimeout)
	}
	if m.max < 1 {
		return nil, usagef("%s: --mcp-max-sessions-per-credential must be at least 1, got %d", cmd, m.max)
	}
	return []mcp.Option{mcp.WithSessions(m.on), mcp.WithSessionIdleTimeout(m.idleTimeout), mcp.WithMaxSessionsPerCredential(m.max)}, nil
}
