package tools

import (
	"encoding/json"
	"strings"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/aiusage/kit/spec"
)

// Logs maps an OTLP logs export request: usage from the events that
// describe one API request, events for sessions, errors and tool decisions,
// prompt text apart. It never fails; what maps to nothing is counted in
// [Batch.Unmapped].
func Logs(req *collogspb.ExportLogsServiceRequest) Batch {
	var bd builder
	bd.logs(req)
	return bd.b
}

func (bd *builder) logs(req *collogspb.ExportLogsServiceRequest) {
	for _, rl := range req.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			var from string // the hash of the resource and scope, computed once for their records
			for _, lr := range sl.GetLogRecords() {
				bd.logRecord(rl.GetResource(), sl.GetScope(), lr, &from)
			}
		}
	}
}

// logRec is one log record with its merged attributes.
type logRec struct {
	res   *resourcepb.Resource
	scope *commonpb.InstrumentationScope
	from  *string // the hash of res and scope, "" until computed
	lr    *logspb.LogRecord
	a     attrs
	id    ident
	name  string
	time  time.Time
}

// hashKey returns a key from a hash of the record with its resource and
// scope.
func (r *logRec) hashKey(kind string) string {
	if *r.from == "" {
		*r.from = hashKey("from", r.res, r.scope)
	}
	return key(kind, *r.from, hashKey("record", r.lr))
}

// eventName returns the record's event name: the eventName field, else the
// event.name attribute. Claude Code sends event.name without its prefix and
// the full name as the body, so a name without a dot that the string body
// ends with is replaced by the body, and one from claude-code without a
// body is given Claude Code's prefix.
func eventName(lr *logspb.LogRecord, a attrs, tool string) string {
	name := lr.GetEventName()
	if name == "" {
		name = a.str("event.name")
	}
	if name == "" || strings.Contains(name, ".") {
		return name
	}
	if body := lr.GetBody().GetStringValue(); strings.HasSuffix(body, "."+name) {
		return body
	}
	if tool == claudeCode {
		return "claude_code." + name
	}
	return name
}

const claudeCode = "claude-code"

func (bd *builder) logRecord(res *resourcepb.Resource, scope *commonpb.InstrumentationScope, lr *logspb.LogRecord, from *string) {
	if bd.scratch == nil {
		bd.scratch = attrs{}
	}
	a := mergeInto(bd.scratch, res.GetAttributes(), scope.GetAttributes(), lr.GetAttributes())
	t := unixNano(lr.GetTimeUnixNano())
	if t.IsZero() {
		t = unixNano(lr.GetObservedTimeUnixNano())
	}
	id := identOf(a)
	r := &logRec{res: res, scope: scope, from: from, lr: lr, a: a, id: id, name: eventName(lr, a, id.tool)}
	r.time = eventTime(a, t)
	bd.seen(r.id, r.time)
	if r.name == "" {
		bd.skipLog(ReasonNoName)
		return
	}
	switch r.name {
	case "claude_code.api_request":
		bd.claudeRequest(r)
	case "codex.sse_event", "codex.websocket_event":
		bd.codexEvent(r)
	case "gemini_cli.api_response":
		bd.geminiResponse(r)
	case "gen_ai.client.inference.operation.details":
		bd.genaiDetails(r)
	case "codex.turn_cost":
		bd.codexTurnCost(r)
	default:
		kind, ok := eventKinds[r.name]
		switch {
		case ok:
			bd.event(r, kind)
		case notCountedEvent(r.name):
			bd.skipLog(ReasonNotCounted)
		default:
			bd.skipLog(ReasonUnknownEvent)
		}
	}
}

// eventKind is how an event name becomes a spec event.
type eventKind struct {
	category string
	action   string // the action, or "" to take it from actionAttr
	// actionAttr names the attribute holding the action (a decision, a
	// success flag), used when action is "".
	actionAttr string
	prompt     bool // the record may carry prompt text in "prompt"
}

// eventKinds lists the events kept as events. Others of a known tool are
// unmapped: they are internal (configuration dumps, streaming deltas) or
// not covered by the spec's events.
var eventKinds = map[string]eventKind{
	"claude_code.user_prompt":               {category: spec.CategoryOther, action: "prompt", prompt: true},
	"claude_code.api_error":                 {category: spec.CategoryIntegration, action: "error"},
	"claude_code.api_retries_exhausted":     {category: spec.CategoryIntegration, action: "error"},
	"claude_code.api_refusal":               {category: spec.CategoryPolicy, action: "refusal"},
	"claude_code.tool_decision":             {category: spec.CategoryAccess, actionAttr: "decision"},
	"claude_code.tool_result":               {category: spec.CategoryIntegration, actionAttr: "success"},
	"claude_code.permission_mode_changed":   {category: spec.CategoryConfiguration, action: "change"},
	"claude_code.managed_settings_resolved": {category: spec.CategoryConfiguration, action: "resolve"},
	"claude_code.auth":                      {category: spec.CategoryAuthentication, action: "auth"},
	"codex.conversation_starts":             {category: spec.CategoryResourceLifecycle, action: "start"},
	"codex.user_prompt":                     {category: spec.CategoryOther, action: "prompt", prompt: true},
	"codex.tool_decision":                   {category: spec.CategoryAccess, actionAttr: "decision"},
	"codex.tool_result":                     {category: spec.CategoryIntegration, actionAttr: "success"},
	"gemini_cli.config":                     {category: spec.CategoryResourceLifecycle, action: "start"},
	"gemini_cli.user_prompt":                {category: spec.CategoryOther, action: "prompt", prompt: true},
	"gemini_cli.api_error":                  {category: spec.CategoryIntegration, action: "error"},
	"gemini_cli.tool_call":                  {category: spec.CategoryIntegration, actionAttr: "success"},
}

// contentKeys are attributes left out of an event's payload: prompt,
// response and tool content, which only Prompts may carry.
var contentKeys = map[string]bool{
	"prompt": true, "response": true, "tool_input": true, "tool_output": true, "output": true, "arguments": true, "tool_parameters": true,
	"function_args": true, "gen_ai.input.messages": true, "gen_ai.output.messages": true,
	"gen_ai.system_instructions": true, "gen_ai.tool.definitions": true,
}

// redacted reports whether prompt text is the placeholder of a tool that
// was not allowed to send it: Claude Code's "<REDACTED>", Codex CLI's
// "[REDACTED]".
func redacted(s string) bool {
	return s == "" || strings.HasPrefix(s, "<REDACTED") || strings.HasPrefix(s, "[REDACTED")
}

// eventKey returns the key of a record: session.id and event.sequence where
// both are present (Claude Code), else a hash of the record.
func (r *logRec) eventKey(kind string) string {
	if seq := r.a.str("event.sequence"); seq != "" && r.id.session != "" {
		return key(kind, r.id.tool, r.id.session, seq)
	}
	return r.hashKey(kind)
}

func (bd *builder) event(r *logRec, kind eventKind) {
	k := r.eventKey("event")
	action := kind.action
	if action == "" {
		action = r.a.str(kind.actionAttr)
		if kind.actionAttr == "success" {
			action = successAction(r.a)
		}
	}
	payload := map[string]any{}
	for _, kv := range r.lr.GetAttributes() {
		if !contentKeys[kv.GetKey()] {
			payload[kv.GetKey()] = jsonValue(kv.GetValue())
		}
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		raw = nil
	}
	ev := Event{Tool: r.id.tool, SessionID: r.id.session, Event: spec.Event{
		ID: k, OccurredAt: spec.NewTime(r.time), Type: r.name, Category: kind.category, Action: action, Payload: raw,
	}}
	if r.id.email != "" || r.id.device != "" {
		ev.Actor = &spec.Actor{Type: spec.ActorUser, ID: r.id.device, Email: r.id.email}
	}
	bd.b.Events = append(bd.b.Events, ev)
	if kind.prompt {
		bd.prompt(r, k, r.a.text("prompt"))
	}
}

// successAction turns a success flag into "success" or "failure", "" when
// absent.
func successAction(a attrs) string {
	f, ok := a.float("success")
	switch {
	case !ok:
		return ""
	case f != 0:
		return "success"
	}
	return "failure"
}

func (bd *builder) prompt(r *logRec, k, text string) {
	if redacted(text) {
		return
	}
	bd.b.Prompts = append(bd.b.Prompts, Prompt{
		Key: k, Time: r.time, Tool: r.id.tool, SessionID: r.id.session, Email: r.id.email,
		Device: r.id.device, Text: text, Source: r.name,
	})
}

// addUsage appends a usage of the record with the counts, or counts it
// unmapped when it has none.
func (bd *builder) addUsage(r *logRec, k string, tok Tokens, cost *float64, found bool) {
	if !found {
		bd.skipLog(ReasonNoTokens)
		return
	}
	u := r.id.usage(OriginEvent, r.name)
	u.Key, u.Time, u.Tokens, u.CostEstimate = k, r.time, tok, cost
	bd.b.Usage = append(bd.b.Usage, u)
}

// claudeRequest maps Claude Code's api_request: input_tokens is already
// uncached input.
func (bd *builder) claudeRequest(r *logRec) {
	in, ok1 := r.a.count("input_tokens")
	out, ok2 := r.a.count("output_tokens")
	cr, ok3 := r.a.count("cache_read_tokens")
	cw, ok4 := r.a.count("cache_creation_tokens")
	var cost *float64
	if c, ok := r.a.float("cost_usd"); ok && c >= 0 {
		cost = &c
	}
	var k string
	switch {
	case r.a.str("event.sequence") != "" && r.id.session != "":
		k = r.eventKey("usage")
	case r.a.str("prompt.id") != "" && r.a.str("request_id") != "":
		k = key("usage", r.id.tool, r.a.str("prompt.id"), r.a.str("request_id"))
	default:
		k = r.hashKey("usage")
	}
	bd.addUsage(r, k, Tokens{Input: in, CacheRead: cr, CacheWrite: cw, Output: out}, cost, ok1 || ok2 || ok3 || ok4)
}

// codexEvent maps Codex CLI's response.completed: input_token_count
// includes cached_token_count.
func (bd *builder) codexEvent(r *logRec) {
	if r.a.str("event.kind") != "response.completed" {
		bd.skipLog(ReasonNotCounted)
		return
	}
	in, ok1 := r.a.count("input_token_count")
	out, ok2 := r.a.count("output_token_count")
	cr, _ := r.a.count("cached_token_count")
	cw, _ := r.a.count("cache_write_token_count")
	tok := Tokens{Input: max(0, in-cr), CacheRead: cr, CacheWrite: cw, Output: out}
	bd.addUsage(r, r.hashKey("usage"), tok, nil, ok1 || ok2)
}

// codexTurnCost maps Codex CLI's turn cost (sent for turns on a ChatGPT
// plan): codex.turn.cost_microusd, in millionths of a dollar, is a cost
// estimate of its own. Its tokens are counted by the turn's
// response.completed events, so it carries none and stands for no request.
func (bd *builder) codexTurnCost(r *logRec) {
	micro, ok := r.a.float("codex.turn.cost_microusd")
	if !ok || micro < 0 {
		bd.skipLog(ReasonNotCounted)
		return
	}
	cost := micro / 1e6
	u := r.id.usage(OriginEstimate, r.name)
	u.Key, u.Time, u.CostEstimate = r.hashKey("usage"), r.time, &cost
	bd.b.Usage = append(bd.b.Usage, u)
}

// geminiResponse maps Gemini CLI's api_response: input_token_count includes
// cached_content_token_count, and thoughts are billed as output.
func (bd *builder) geminiResponse(r *logRec) {
	in, ok1 := r.a.count("input_token_count")
	out, ok2 := r.a.count("output_token_count")
	cr, _ := r.a.count("cached_content_token_count")
	th, _ := r.a.count("thoughts_token_count")
	tok := Tokens{Input: max(0, in-cr), CacheRead: cr, Output: out + th}
	bd.addUsage(r, r.hashKey("usage"), tok, nil, ok1 || ok2)
}

// genaiDetails maps the GenAI inference details event. Gemini CLI sends it
// beside its own api_response for the same request, so from Gemini CLI it
// is not counted.
func (bd *builder) genaiDetails(r *logRec) {
	if r.id.tool == geminiCLI {
		bd.skipLog(ReasonCountedElsewhere)
		return
	}
	k := r.hashKey("usage")
	tok, found := genaiTokens(r.a)
	bd.addUsage(r, k, tok, nil, found)
	bd.prompt(r, k, r.a.text("gen_ai.input.messages"))
}

const geminiCLI = "gemini-cli"

// genaiTokens reads the GenAI usage attributes, including the deprecated
// prompt_tokens and completion_tokens: input_tokens includes the cache
// tokens, which are subtracted.
func genaiTokens(a attrs) (Tokens, bool) {
	in, ok1 := a.countOf("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
	out, ok2 := a.countOf("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
	cr, _ := a.count("gen_ai.usage.cache_read.input_tokens")
	cw, _ := a.count("gen_ai.usage.cache_creation.input_tokens")
	return Tokens{Input: max(0, in-cr-cw), CacheRead: cr, CacheWrite: cw, Output: out}, ok1 || ok2
}
