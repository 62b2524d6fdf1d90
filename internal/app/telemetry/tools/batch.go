package tools

import (
	"time"

	"github.com/aiusage/kit/spec"
)

// Origin is the kind of record a [Usage] comes from.
type Origin string

// The origins, in the order [Dedup] prefers them.
const (
	// OriginEvent is a log record describing one API request (Claude Code's
	// api_request, Codex's response.completed, Gemini's api_response, the
	// GenAI inference details event).
	OriginEvent Origin = "event"
	// OriginSpan is a span carrying gen_ai.usage.* attributes.
	OriginSpan Origin = "span"
	// OriginMetric is one metric data point.
	OriginMetric Origin = "metric"
	// OriginDraftMetric is one data point of the draft GenAI counters
	// (gen_ai.client.inference.*), which repeat gen_ai.client.token.usage
	// where a tool sends both: they count only where it is absent.
	OriginDraftMetric Origin = "metric-draft"
	// OriginEstimate is a cost estimate of its own, without tokens (Codex
	// CLI's turn cost): it repeats no other record, so [Dedup] always keeps
	// it and it outranks nothing, and it stands for no API request.
	OriginEstimate Origin = "estimate"
)

// rank orders origins: a higher rank wins in [Dedup]; 0 is always kept.
func (o Origin) rank() int {
	switch o {
	case OriginEvent:
		return 4
	case OriginSpan:
		return 3
	case OriginMetric:
		return 2
	case OriginDraftMetric:
		return 1
	}
	return 0
}

// PerRequest reports whether a usage of origin o stands for one API
// request (an event or a span), rather than an aggregate (a metric point)
// or a cost alone.
func (o Origin) PerRequest() bool { return o == OriginEvent || o == OriginSpan }

// Tokens are the four token counts kept apart. Input is uncached input only:
// the prompt's size is Input + CacheRead + CacheWrite. Output includes
// reasoning (thinking) tokens, which are billed as output.
//
// A single metric point may carry a negative Input: Gemini CLI's "cache"
// point and Codex CLI's "cached_input" point move their tokens from the input
// point (which includes them) to CacheRead, so that the points of one
// request sum to the right numbers.
type Tokens struct {
	Input      int64 `json:"input"`
	CacheRead  int64 `json:"cacheRead"`
	CacheWrite int64 `json:"cacheWrite"`
	Output     int64 `json:"output"`
}

// Add returns the sum of t and u.
func (t Tokens) Add(u Tokens) Tokens {
	return Tokens{t.Input + u.Input, t.CacheRead + u.CacheRead, t.CacheWrite + u.CacheWrite, t.Output + u.Output}
}

// Sub returns t minus u.
func (t Tokens) Sub(u Tokens) Tokens {
	return Tokens{t.Input - u.Input, t.CacheRead - u.CacheRead, t.CacheWrite - u.CacheWrite, t.Output - u.Output}
}

// IsZero reports whether every count is zero.
func (t Tokens) IsZero() bool { return t == Tokens{} }

// Usage is one observation of token use: one API request (from an event or
// a span) or one metric data point.
type Usage struct {
	// Key is unique to the occurrence and the same every time the same record
	// is mapped: a store keeps one Usage per Key.
	Key string
	// Time is the record's own time in UTC (Claude Code's and Codex's
	// event.timestamp, else the record's timeUnixNano), never the arrival
	// time. A span's is its end time, a metric point's its timeUnixNano.
	Time time.Time
	// Tool is the resource's service.name (claude-code, codex-cli, ...).
	Tool string
	// ToolVersion is service.version, else app.version.
	ToolVersion string
	// Model is model, else gen_ai.response.model, else gen_ai.request.model.
	Model string
	// Email is user.email, trimmed and lower-cased; empty when not sent. It
	// is a hint: the organisation comes from the key that sent the data.
	Email string
	// Device is user.id, else installation.id: a hashed device or install
	// id, a label only, never a person.
	Device string
	// SessionID is session.id, else conversation.id, else
	// gen_ai.conversation.id.
	SessionID string
	// Department and Team come from the attributes department, and team.id
	// else team, which administrators set in OTEL_RESOURCE_ATTRIBUTES.
	Department string
	Team       string
	// Tokens are the counts: for a cumulative point, the running total.
	Tokens Tokens
	// CostEstimate is the cost in USD the tool estimated itself (Claude
	// Code's cost_usd and claude_code.cost.usage, LiteLLM's
	// gen_ai.client.token.cost), nil where the tool sends none. It is never
	// computed here. For a cumulative point it is the running total.
	CostEstimate *float64
	// Origin is the kind of record this came from; see [Dedup].
	Origin Origin
	// Source is the name of the record: the event name, the metric name or
	// the span name.
	Source string
	// Cumulative is true for a metric point of CUMULATIVE (or UNSPECIFIED)
	// temporality: Tokens and CostEstimate are running totals since Start,
	// to be turned into deltas by an [Accumulator]. False for delta points,
	// events and spans.
	Cumulative bool
	// Series identifies a metric point's time series (resource, scope,
	// metric name and point attributes); empty for events and spans.
	Series string
	// Start is a metric point's startTimeUnixNano in UTC; zero for events
	// and spans.
	Start time.Time
}

// Event is one notable action (a prompt, an API error, a tool decision or
// result, a session start), close to [spec.Event]: ID is its idempotency
// key, Type the tool's event name verbatim, Payload the record's own
// attributes without prompt, response or tool content.
type Event struct {
	spec.Event
	// Tool is the resource's service.name.
	Tool string
	// SessionID is as in [Usage].
	SessionID string
}

// Assistant is a tool seen in the batch, close to [spec.Assistant]: ID and
// Name are service.name, Version service.version.
type Assistant struct {
	ID      string
	Name    string
	Version string
	// LastSeen is the latest record time of the tool in the batch.
	LastSeen time.Time
}

// Prompt is prompt text a tool sent (Claude Code's user_prompt with
// OTEL_LOG_USER_PROMPTS, Codex's with log_user_prompt, Gemini CLI's with
// logPrompts, gen_ai.input.messages). Prompts are kept apart from events so
// that a store drops them unless the organisation allows storing them.
type Prompt struct {
	// Key is the idempotency key (that of the event the text came with).
	Key       string
	Time      time.Time
	Tool      string
	SessionID string
	Email     string
	Device    string
	// Text is the prompt text; structured gen_ai.input.messages are kept as
	// their JSON.
	Text string
	// Source is the name of the record the text came with.
	Source string
}

// Reason says why a record mapped to nothing. The set is fixed, so it can
// label a metric.
type Reason string

// The reasons a record maps to nothing.
const (
	// ReasonNoName is a log record without an event name.
	ReasonNoName Reason = "no event name"
	// ReasonUnknownEvent is an event name this package does not map.
	ReasonUnknownEvent Reason = "unknown event"
	// ReasonUnknownMetric is a metric name this package does not map.
	ReasonUnknownMetric Reason = "unknown metric"
	// ReasonNotCounted is a known record that carries nothing counted
	// (a session counter, lines of code, a streaming delta, tool tokens).
	ReasonNotCounted Reason = "not counted"
	// ReasonCountedElsewhere is a record that repeats what another record of
	// the same tool counts (Gemini CLI's GenAI event and histogram).
	ReasonCountedElsewhere Reason = "counted by another record"
	// ReasonMetricKind is a point of a kind not summed (gauge, summary,
	// exponential histogram, histogram without sum).
	ReasonMetricKind Reason = "metric kind not counted"
	// ReasonNoTokens is a usage record or span without token counts.
	ReasonNoTokens Reason = "no token counts"
	// ReasonAggregate is an agent or workflow span, whose usage (if any)
	// repeats that of the inference spans under it.
	ReasonAggregate Reason = "agent span"
)

// Unmapped counts the records that mapped to nothing. It is never an error:
// the caller reports it in the OTLP partial-success message and its metrics.
type Unmapped struct {
	LogRecords int
	DataPoints int
	Spans      int
	// Reasons counts the records by reason, all signals together.
	Reasons map[Reason]int
}

// Total returns the number of unmapped records of all signals.
func (u Unmapped) Total() int { return u.LogRecords + u.DataPoints + u.Spans }

// Batch is what one export request maps to.
type Batch struct {
	// Usage holds one entry per API request (events, spans) or per metric
	// data point, in the order of the request.
	Usage []Usage
	// Events holds the sessions, errors and tool decisions.
	Events []Event
	// Assistants lists each tool (service.name and version) seen once.
	Assistants []Assistant
	// Prompts holds the prompt text sent, apart from Events.
	Prompts []Prompt
	// Unmapped counts what mapped to nothing.
	Unmapped Unmapped
}
