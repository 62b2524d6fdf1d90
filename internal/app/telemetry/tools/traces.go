package tools

import (
	"encoding/hex"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Traces maps an OTLP traces export request: one [Usage] per span that
// carries GenAI token counts (gen_ai.usage.*), prompt text from
// gen_ai.input.messages apart. Agent and workflow spans are not counted:
// their usage repeats that of the inference spans under them. It never
// fails; what maps to nothing is counted in [Batch.Unmapped].
func Traces(req *coltracepb.ExportTraceServiceRequest) Batch {
	var bd builder
	bd.traces(req)
	return bd.b
}

func (bd *builder) traces(req *coltracepb.ExportTraceServiceRequest) {
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				a := merge(rs.GetResource().GetAttributes(), ss.GetScope().GetAttributes(), sp.GetAttributes())
				bd.span(a, sp)
			}
		}
	}
}

// aggregateOps are the gen_ai.operation.name values of spans that contain
// inference spans.
var aggregateOps = map[string]bool{"invoke_agent": true, "create_agent": true, "invoke_workflow": true}

func (bd *builder) span(a attrs, sp *tracepb.Span) {
	id := identOf(a)
	t := unixNano(sp.GetEndTimeUnixNano())
	if t.IsZero() {
		t = unixNano(sp.GetStartTimeUnixNano())
	}
	bd.seen(id, t)
	tok, found := genaiTokens(a)
	switch {
	case aggregateOps[a.str("gen_ai.operation.name")]:
		bd.skipSpan(ReasonAggregate)
		return
	case !found:
		bd.skipSpan(ReasonNoTokens)
		return
	}
	var k string
	if len(sp.GetTraceId()) > 0 || len(sp.GetSpanId()) > 0 {
		k = key("span", hex.EncodeToString(sp.GetTraceId()), hex.EncodeToString(sp.GetSpanId()))
	} else {
		k = hashKey("span", sp)
	}
	u := id.usage(OriginSpan, sp.GetName())
	u.Key, u.Time, u.Tokens = k, t, tok
	bd.b.Usage = append(bd.b.Usage, u)
	if text := a.text("gen_ai.input.messages"); !redacted(text) {
		bd.b.Prompts = append(bd.b.Prompts, Prompt{
			Key: k, Time: t, Tool: id.tool, SessionID: id.session, Email: id.email, Device: id.device,
			Text: text, Source: sp.GetName(),
		})
	}
}
