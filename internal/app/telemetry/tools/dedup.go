package tools

// Dedup applies the one-source rule to a set of usage: where a tool sends
// the same requests as several kinds of record, only the most exact kind
// counts. Events win over spans, spans over metrics, and metrics over the
// draft GenAI counters (an event is one API request with its own time and
// key; a span usually repeats it; a metric point pre-aggregates it; the
// draft counters repeat gen_ai.client.token.usage). A cost estimate of its
// own ([OriginEstimate]) is always kept.
//
// The rule is applied per tool and session: a usage is dropped when the
// set holds usage of a higher [Origin] for the same Tool and SessionID. A
// usage without a SessionID (Claude Code with OTEL_METRICS_INCLUDE_SESSION_ID
// off, gateways) is compared with all usage of the same Tool and Device, or
// of the same Tool when it has no Device either. Usage without a known
// origin is kept. The order of what is kept is that of us; us is not
// modified.
//
// A store applies the same rule to what it holds, so that a tool whose
// events and metrics arrive in different requests is still counted once.
func Dedup(us []Usage) []Usage {
	type tk struct{ tool, v string }
	bySession, byDevice, byTool := map[tk]int{}, map[tk]int{}, map[string]int{}
	for _, u := range us {
		r := u.Origin.rank()
		if u.SessionID != "" {
			bySession[tk{u.Tool, u.SessionID}] = max(bySession[tk{u.Tool, u.SessionID}], r)
		}
		if u.Device != "" {
			byDevice[tk{u.Tool, u.Device}] = max(byDevice[tk{u.Tool, u.Device}], r)
		}
		byTool[u.Tool] = max(byTool[u.Tool], r)
	}
	out := make([]Usage, 0, len(us))
	for _, u := range us {
		r := u.Origin.rank()
		var best int
		switch {
		case u.SessionID != "":
			best = bySession[tk{u.Tool, u.SessionID}]
		case u.Device != "":
			best = byDevice[tk{u.Tool, u.Device}]
		default:
			best = byTool[u.Tool]
		}
		if r == 0 || r >= best {
			out = append(out, u)
		}
	}
	return out
}
