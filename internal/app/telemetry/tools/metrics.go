package tools

import (
	"math"
	"strconv"
	"strings"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// Metrics maps an OTLP metrics export request: one [Usage] per data point
// of a token or cost metric. A point of CUMULATIVE temporality, and of
// UNSPECIFIED temporality (invalid per OTLP, treated as cumulative because
// that is the SDKs' default), carries running totals with its Series and
// Start; an [Accumulator] turns them into deltas. It never fails; what
// maps to nothing is counted in [Batch.Unmapped].
func Metrics(req *colmetricspb.ExportMetricsServiceRequest) Batch {
	var bd builder
	bd.metrics(req)
	return bd.b
}

func (bd *builder) metrics(req *colmetricspb.ExportMetricsServiceRequest) {
	for _, rm := range req.GetResourceMetrics() {
		res := rm.GetResource().GetAttributes()
		for _, sm := range rm.GetScopeMetrics() {
			sc := sm.GetScope()
			m := metricScope{res: res, scope: sc.GetAttributes(),
				scopeID: strconv.Quote(sc.GetName()) + strconv.Quote(sc.GetVersion()) + canonical(merge(res)) + "|" + canonical(merge(sc.GetAttributes()))}
			for _, metric := range sm.GetMetrics() {
				bd.metric(m, metric)
			}
		}
	}
}

// metricScope is what the points of one scope share.
type metricScope struct {
	res, scope []*commonpb.KeyValue
	scopeID    string // resource and scope, canonical: the start of a series id
}

// point is one data point reduced to what is mapped.
type point struct {
	attrs      []*commonpb.KeyValue
	start, at  uint64
	value      float64
	cumulative bool
}

func (bd *builder) metric(m metricScope, metric *metricspb.Metric) {
	var pts []point
	switch d := metric.GetData().(type) {
	case *metricspb.Metric_Sum:
		cum := d.Sum.GetAggregationTemporality() != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		for _, p := range d.Sum.GetDataPoints() {
			v := p.GetAsDouble()
			if _, ok := p.GetValue().(*metricspb.NumberDataPoint_AsInt); ok {
				v = float64(p.GetAsInt())
			}
			pts = append(pts, point{p.GetAttributes(), p.GetStartTimeUnixNano(), p.GetTimeUnixNano(), v, cum})
		}
	case *metricspb.Metric_Histogram:
		cum := d.Histogram.GetAggregationTemporality() != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		for _, p := range d.Histogram.GetDataPoints() {
			if p.Sum == nil {
				bd.seen(identOf(merge(m.res, m.scope, p.GetAttributes())), unixNano(p.GetTimeUnixNano()))
				bd.skipPoint(ReasonMetricKind)
				continue
			}
			pts = append(pts, point{p.GetAttributes(), p.GetStartTimeUnixNano(), p.GetTimeUnixNano(), p.GetSum(), cum})
		}
	default:
		bd.skipOtherPoints(m, metric)
		return
	}
	for _, p := range pts {
		bd.metricPoint(m, metric.GetName(), p)
	}
}

// skipOtherPoints counts the points of a gauge, summary or exponential
// histogram as unmapped: token and cost metrics are sums or histograms.
func (bd *builder) skipOtherPoints(m metricScope, metric *metricspb.Metric) {
	var attrs [][]*commonpb.KeyValue
	var times []uint64
	switch d := metric.GetData().(type) {
	case *metricspb.Metric_Gauge:
		for _, p := range d.Gauge.GetDataPoints() {
			attrs, times = append(attrs, p.GetAttributes()), append(times, p.GetTimeUnixNano())
		}
	case *metricspb.Metric_Summary:
		for _, p := range d.Summary.GetDataPoints() {
			attrs, times = append(attrs, p.GetAttributes()), append(times, p.GetTimeUnixNano())
		}
	case *metricspb.Metric_ExponentialHistogram:
		for _, p := range d.ExponentialHistogram.GetDataPoints() {
			attrs, times = append(attrs, p.GetAttributes()), append(times, p.GetTimeUnixNano())
		}
	}
	for i := range attrs {
		bd.seen(identOf(merge(m.res, m.scope, attrs[i])), unixNano(times[i]))
		bd.skipPoint(ReasonMetricKind)
	}
}

func (bd *builder) metricPoint(m metricScope, name string, p point) {
	a := merge(m.res, m.scope, p.attrs)
	id := identOf(a)
	at := unixNano(p.at)
	bd.seen(id, at)
	tok, cost, reason := metricValue(id.tool, name, a, p.value)
	if reason != "" {
		bd.skipPoint(reason)
		return
	}
	origin := OriginMetric
	if strings.HasPrefix(name, draftPrefix) {
		origin = OriginDraftMetric
	}
	u := id.usage(origin, name)
	u.Series = key("series", m.scopeID, name, canonical(merge(p.attrs)))
	u.Key = key("point", u.Series, strconv.FormatUint(p.start, 10), strconv.FormatUint(p.at, 10))
	u.Time, u.Start, u.Cumulative = at, unixNano(p.start), p.cumulative
	u.Tokens, u.CostEstimate = tok, cost
	bd.b.Usage = append(bd.b.Usage, u)
}

// metricValue maps one point's value by metric name and tool to tokens or a
// cost estimate, or returns why it maps to nothing.
func metricValue(tool, name string, a attrs, v float64) (Tokens, *float64, Reason) {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > maxExact {
		return Tokens{}, nil, ReasonNoTokens
	}
	n := int64(math.Round(v))
	switch name {
	case "claude_code.token.usage":
		return typed(a.str("type"), n, map[string]func(int64) Tokens{
			"input":         func(n int64) Tokens { return Tokens{Input: n} },
			"output":        func(n int64) Tokens { return Tokens{Output: n} },
			"cacheRead":     func(n int64) Tokens { return Tokens{CacheRead: n} },
			"cacheCreation": func(n int64) Tokens { return Tokens{CacheWrite: n} },
		})
	case "gemini_cli.token.usage":
		return typed(a.str("type"), n, map[string]func(int64) Tokens{
			"input": func(n int64) Tokens { return Tokens{Input: n} },
			// The input point includes the cached tokens: the cache point
			// moves them from Input to CacheRead.
			"cache":   func(n int64) Tokens { return Tokens{Input: -n, CacheRead: n} },
			"output":  func(n int64) Tokens { return Tokens{Output: n} },
			"thought": func(n int64) Tokens { return Tokens{Output: n} },
		})
	case "codex.turn.token_usage":
		// A histogram of one value per turn by token_type; input includes
		// cached_input, as in the events. total, non_cached_input and
		// reasoning_output repeat the others.
		return typed(a.str("token_type"), n, map[string]func(int64) Tokens{
			"input":             func(n int64) Tokens { return Tokens{Input: n} },
			"cached_input":      func(n int64) Tokens { return Tokens{Input: -n, CacheRead: n} },
			"cache_write_input": func(n int64) Tokens { return Tokens{CacheWrite: n} },
			"output":            func(n int64) Tokens { return Tokens{Output: n} },
		})
	case "gen_ai.client.token.usage":
		if tool == geminiCLI {
			return Tokens{}, nil, ReasonCountedElsewhere
		}
		return typed(a.str("gen_ai.token.type"), n, map[string]func(int64) Tokens{
			"input":  func(n int64) Tokens { return Tokens{Input: n} },
			"output": func(n int64) Tokens { return Tokens{Output: n} },
		})
	case "claude_code.cost.usage", "gen_ai.client.token.cost":
		if v < 0 {
			return Tokens{}, nil, ReasonNoTokens
		}
		return Tokens{}, &v, ""
	}
	if strings.HasPrefix(name, draftPrefix) {
		return draftTokens(strings.TrimPrefix(name, draftPrefix), a, n)
	}
	if _, ok := knownMetrics[name]; ok || vendorNamespace(name) {
		return Tokens{}, nil, ReasonNotCounted
	}
	return Tokens{}, nil, ReasonUnknownMetric
}

// draftPrefix starts the names of the draft GenAI token counters.
const draftPrefix = "gen_ai.client.inference."

// draftTokens maps a point of a draft GenAI token counter
// (gen_ai.client.inference.<rest>), whose names differ between drafts: the
// direction is in the name (…input_tokens, …output_tokens) or in
// gen_ai.token.type, and input points are split by gen_ai.token.cache
// (none, read, creation), each point counting its own part. The detailed
// breakdowns (…usage.detailed.*: reasoning, modalities) are parts of those
// counts and other names (durations) carry no tokens: not counted.
func draftTokens(rest string, a attrs, n int64) (Tokens, *float64, Reason) {
	if !strings.Contains(rest, "token") || strings.Contains(rest, "detailed") {
		return Tokens{}, nil, ReasonNotCounted
	}
	dir := a.str("gen_ai.token.type")
	switch {
	case strings.HasSuffix(rest, "input_tokens"):
		dir = "input"
	case strings.HasSuffix(rest, "output_tokens"):
		dir = "output"
	}
	if dir == "input" {
		return typed(a.str("gen_ai.token.cache"), n, map[string]func(int64) Tokens{
			"":         func(n int64) Tokens { return Tokens{Input: n} },
			"none":     func(n int64) Tokens { return Tokens{Input: n} },
			"read":     func(n int64) Tokens { return Tokens{CacheRead: n} },
			"creation": func(n int64) Tokens { return Tokens{CacheWrite: n} },
		})
	}
	return typed(dir, n, map[string]func(int64) Tokens{
		"output": func(n int64) Tokens { return Tokens{Output: n} },
	})
}

// typed maps a token count by its type attribute; an unknown type (Gemini
// CLI's "tool", say) is not counted.
func typed(typ string, n int64, by map[string]func(int64) Tokens) (Tokens, *float64, Reason) {
	f, ok := by[typ]
	if !ok {
		return Tokens{}, nil, ReasonNotCounted
	}
	if n < 0 {
		return Tokens{}, nil, ReasonNoTokens
	}
	return f(n), nil, ""
}

// knownMetrics are metrics of the tools that carry no token or cost counts;
// they are unmapped as not counted rather than unknown.
var knownMetrics = map[string]struct{}{
	"claude_code.session.count": {}, "claude_code.lines_of_code.count": {}, "claude_code.commit.count": {},
	"claude_code.pull_request.count": {}, "claude_code.active_time.total": {}, "claude_code.code_edit_tool.decision": {},
	"gemini_cli.session.count": {}, "gemini_cli.api.request.count": {}, "gemini_cli.api.request.latency": {},
	"gemini_cli.tool.call.count": {}, "gemini_cli.lines.changed": {},
	"gen_ai.client.operation.duration": {}, "gen_ai.client.operation.time_to_first_chunk": {},
	"gen_ai.client.operation.time_per_output_chunk": {},
	"codex.turn.token_usage":                        {}, "codex.api_request": {}, "codex.api_request.duration_ms": {}, "codex.sse_event": {},
	"codex.tool.call": {}, "codex.turn.e2e_duration_ms": {}, "codex.thread.started": {},
}
