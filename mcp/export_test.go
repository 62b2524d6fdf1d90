package mcp

import "time"

// WithNow sets the clock of the sessions of WithSessions.
func WithNow(now func() time.Time) Option { return withNow(now) }

// Registered is the number of sessions registered with mcp-go.
func (s *Server) Registered() int64 { return s.registered.Load() }

// LiveSessions is the number of sessions the table holds (0 when stateless).
func (s *Server) LiveSessions() int {
	if s.sessions == nil {
		return 0
	}
	return s.sessions.len()
}
