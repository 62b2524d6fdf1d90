package cli

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	"google.golang.org/grpc"

	"github.com/aiusage/kit/internal/app/org"
)

// The demo's telemetry: an Ingestion key of the demo organisation, and the
// generated telemetry of two AI tools (Claude Code and Gemini CLI) it sends
// at start through the service's own OTLP endpoint, over HTTP and gRPC,
// with the OpenTelemetry Go SDK, as the tools would.
const (
	demoTelemetryKeyName = "demo telemetry"
	// demoTelemetryDays is how many days back the generated telemetry goes.
	demoTelemetryDays = 4
	// demoTelemetryTimeout bounds the sending, which runs in the
	// background.
	demoTelemetryTimeout = 30 * time.Second
)

// demoTelemetryKey returns the demo organisation's Ingestion key, created
// the first time and kept encrypted in demo_secrets.
func demoTelemetryKey(ctx context.Context, ds *demoStore, orgs *org.Store, orgID string) (string, error) {
	v, err := ds.get(ctx, "ingestion_key")
	if err != nil || v != "" {
		return v, err
	}
	key, err := orgs.CreateKey(ctx, org.KeyCreate{OrganisationID: orgID, Name: demoTelemetryKeyName,
		Type: org.KeyTypeIngestion, NoExpiry: true}, org.Actor{Type: org.ActorAdmin, Name: "aiusage demo"})
	if err != nil {
		return "", fmt.Errorf("create the demo's Ingestion key: %w", err)
	}
	return key.Secret, ds.set(ctx, "ingestion_key", key.Secret)
}

// demoTelemetryEnd returns the end of the generated telemetry: the hour of
// the first start, kept in demo_state so that later starts send the same
// records, which the endpoint then recognises and does not count again.
func demoTelemetryEnd(ctx context.Context, ds *demoStore) (time.Time, error) {
	v, err := ds.get(ctx, "telemetry_end")
	if err != nil {
		return time.Time{}, err
	}
	if v != "" {
		return time.Parse(time.RFC3339, v)
	}
	end := time.Now().UTC().Truncate(time.Hour)
	return end, ds.set(ctx, "telemetry_end", end.Format(time.RFC3339))
}

// demoTelemetryLine is the block's line naming the OTLP endpoint and the
// Ingestion key.
func demoTelemetryLine(base string, g *otlpGRPCFlags, key string) string {
	grpc := "no gRPC: --otlp-grpc-addr is empty"
	switch {
	case g.taken != "":
		grpc = fmt.Sprintf("gRPC at %s, %s being taken", g.endpoint, g.taken)
	case g.endpoint != "":
		grpc = "gRPC at " + g.endpoint
	}
	return fmt.Sprintf("  telemetry      OTLP %s  (HTTP at /v1/{logs,metrics,traces}; %s; Ingestion key %s)\n"+
		"                 Claude Code and Gemini CLI telemetry sent at start; see docs/telemetry.md\n", base, grpc, key)
}

// demoTelemetryPerson is one person of the generated telemetry.
type demoTelemetryPerson struct {
	email string
	idx   int
}

// demoTarget is where the demo sends its telemetry: the OTLP/HTTP endpoint
// at base, and the OTLP/gRPC one at grpc (http://host:port) unless that is
// empty, with the Ingestion key key.
type demoTarget struct {
	base, grpc, key string
	partial         *demoPartial
}

// sendDemoTelemetry sends the generated telemetry of the two tools to t,
// ending at end: Claude Code over HTTP (its exporters' protocol in the
// docs' setup), Gemini CLI over gRPC (its default) when t has a gRPC
// endpoint, else over HTTP too. The endpoint's partial successes are not
// errors: see [demoPartial].
func sendDemoTelemetry(ctx context.Context, t demoTarget, end time.Time, emails []string) error {
	var people []demoTelemetryPerson
	for i, e := range emails {
		people = append(people, demoTelemetryPerson{email: e, idx: i})
	}
	for _, tool := range []demoTool{demoClaude{}, demoGemini{}} {
		if err := sendDemoTool(ctx, t, tool, end, people); err != nil {
			return fmt.Errorf("%s: %w", tool.name(), err)
		}
	}
	return nil
}

// demoProtocol returns the protocol the demo sends tool's telemetry over
// to t: "grpc" or "http".
func demoProtocol(t demoTarget, tool demoTool) string {
	if _, ok := tool.(demoGemini); ok && t.grpc != "" {
		return "grpc"
	}
	return "http"
}

// demoExporters returns the log and metric exporters sending tool's
// telemetry to t.
func demoExporters(ctx context.Context, t demoTarget, tool demoTool) (sdklog.Exporter, sdkmetric.Exporter, error) {
	headers := map[string]string{"Authorization": "Bearer " + t.key}
	temporality := func(sdkmetric.InstrumentKind) metricdata.Temporality { return tool.temporality() }
	if demoProtocol(t, tool) == "grpc" {
		dial := grpc.WithUnaryInterceptor(t.partial.unaryInterceptor())
		lexp, err := otlploggrpc.New(ctx, otlploggrpc.WithEndpointURL(t.grpc), otlploggrpc.WithHeaders(headers), otlploggrpc.WithDialOption(dial))
		if err != nil {
			return nil, nil, err
		}
		mexp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpointURL(t.grpc), otlpmetricgrpc.WithHeaders(headers),
			otlpmetricgrpc.WithDialOption(dial), otlpmetricgrpc.WithTemporalitySelector(temporality))
		if err != nil {
			_ = lexp.Shutdown(ctx)
			return nil, nil, err
		}
		return lexp, mexp, nil
	}
	client := t.partial.httpClient()
	lexp, err := otlploghttp.New(ctx, otlploghttp.WithEndpointURL(t.base+"/v1/logs"), otlploghttp.WithHeaders(headers),
		otlploghttp.WithHTTPClient(client))
	if err != nil {
		return nil, nil, err
	}
	mexp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(t.base+"/v1/metrics"), otlpmetrichttp.WithHeaders(headers),
		otlpmetrichttp.WithHTTPClient(client), otlpmetrichttp.WithTemporalitySelector(temporality))
	if err != nil {
		_ = lexp.Shutdown(ctx)
		return nil, nil, err
	}
	return lexp, mexp, nil
}

// demoSession is one generated session of a tool.
type demoSession struct {
	id     string
	email  string
	start  time.Time
	random *rand.Rand
}

// demoTool generates the records of one tool.
type demoTool interface {
	name() string
	version() string
	scope() string
	// metricScope is the instrumentation scope of the tool's metrics.
	metricScope() string
	// temporality is that of the tool's metrics.
	temporality() metricdata.Temporality
	// session emits the log records and records the metrics of s.
	session(ctx context.Context, lg otellog.Logger, m metric.Meter, s demoSession) error
}

func sendDemoTool(ctx context.Context, t demoTarget, tool demoTool, end time.Time, people []demoTelemetryPerson) error {
	res := resource.NewSchemaless(attribute.String("service.name", tool.name()), attribute.String("service.version", tool.version()))
	lexp, mexp, err := demoExporters(ctx, t, tool)
	if err != nil {
		return err
	}
	lp := sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(sdklog.NewBatchProcessor(lexp)))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp)))
	lg := lp.Logger(tool.scope(), otellog.WithInstrumentationVersion(tool.version()))
	meter := mp.Meter(tool.metricScope(), metric.WithInstrumentationVersion(tool.version()))
	var firstErr error
	for day := demoTelemetryDays; day >= 1 && firstErr == nil; day-- {
		for _, p := range people {
			start := end.Add(-time.Duration(day)*24*time.Hour + time.Duration(9+2*p.idx)*time.Hour)
			seed := demoSeed(tool.name(), p.email, start)
			s := demoSession{id: demoSessionID(seed), email: p.email, start: start, random: rand.New(rand.NewPCG(seed, 30))}
			if firstErr = tool.session(ctx, lg, meter, s); firstErr != nil {
				break
			}
		}
	}
	// Shutting down flushes what is left: the log batch and the metrics.
	if err := lp.Shutdown(ctx); err != nil && firstErr == nil {
		firstErr = err
	}
	if err := mp.Shutdown(ctx); err != nil && firstErr == nil {
		firstErr = err
	}
	return firstErr
}

// demoSeed returns a stable seed of a tool's session.
func demoSeed(tool, email string, start time.Time) uint64 {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%s|%s|%d", tool, email, start.Unix())
	return h.Sum64()
}

// demoSessionID returns a UUID-shaped session id from seed.
func demoSessionID(seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 1))
	a, b := r.Uint64(), r.Uint64()
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(a>>32), uint16(a>>16), uint16(a)&0xfff, uint16(b>>48)&0xfff, b&0xffffffffffff)
}

// emitDemo emits one log record at t, with body and attributes.
func emitDemo(ctx context.Context, lg otellog.Logger, t time.Time, body string, attrs ...attribute.KeyValue) {
	var r otellog.Record
	r.SetTimestamp(t)
	// A fixed observed time too: the record is then the same on every
	// start, and so is the key the endpoint derives from it.
	r.SetObservedTimestamp(t)
	if body != "" {
		r.SetBody(attribute.StringValue(body))
	}
	r.AddAttributes(attrs...)
	lg.Emit(ctx, r)
}

// demoClaude is Claude Code: events with event.sequence per session, and
// delta token metrics.
type demoClaude struct{}

func (demoClaude) name() string                        { return "claude-code" }
func (demoClaude) version() string                     { return "2.1.332" }
func (demoClaude) scope() string                       { return "com.anthropic.claude_code.events" }
func (demoClaude) metricScope() string                 { return "com.anthropic.claude_code" }
func (demoClaude) temporality() metricdata.Temporality { return metricdata.DeltaTemporality }

func (demoClaude) session(ctx context.Context, lg otellog.Logger, m metric.Meter, s demoSession) error {
	tokens, err := m.Float64Counter("claude_code.token.usage", metric.WithUnit("tokens"))
	if err != nil {
		return err
	}
	common := []attribute.KeyValue{attribute.String("session.id", s.id), attribute.String("user.email", s.email),
		attribute.String("terminal.type", "vscode")}
	seq := 0
	event := func(t time.Time, name string, attrs ...attribute.KeyValue) {
		seq++
		all := append([]attribute.KeyValue{attribute.String("event.name", name),
			attribute.String("event.timestamp", t.Format("2006-01-02T15:04:05.000Z")), attribute.Int("event.sequence", seq)}, common...)
		emitDemo(ctx, lg, t, "claude_code."+name, append(all, attrs...)...)
	}
	models := []string{"claude-sonnet-4-5", "claude-haiku-4-5"}
	t := s.start
	prompts := 2 + s.random.IntN(3)
	for p := range prompts {
		promptID := fmt.Sprintf("%s-p%d", s.id, p)
		event(t, "user_prompt", attribute.String("prompt.id", promptID), attribute.String("prompt_length", strconv.Itoa(20+s.random.IntN(200))),
			attribute.String("prompt", "<REDACTED>"))
		model := models[s.random.IntN(len(models))]
		in, out := int64(50+s.random.IntN(900)), int64(100+s.random.IntN(1500))
		cr, cw := int64(1000+s.random.IntN(20000)), int64(s.random.IntN(3000))
		cost := float64(in*3+cw*375/100+out*15)/1e6 + float64(cr)*0.3/1e6
		t = t.Add(time.Duration(2+s.random.IntN(10)) * time.Second)
		event(t, "api_request", attribute.String("prompt.id", promptID), attribute.String("model", model),
			attribute.Int64("input_tokens", in), attribute.Int64("output_tokens", out), attribute.Int64("cache_read_tokens", cr),
			attribute.Int64("cache_creation_tokens", cw), attribute.Float64("cost_usd", cost),
			attribute.String("request_id", fmt.Sprintf("req_%s_%d", s.id[:8], p)), attribute.Int("duration_ms", 800+s.random.IntN(4000)))
		decision := "accept"
		if s.random.IntN(5) == 0 {
			decision = "reject"
		}
		t = t.Add(time.Duration(5+s.random.IntN(30)) * time.Second)
		event(t, "tool_decision", attribute.String("prompt.id", promptID), attribute.String("tool_name", "Edit"),
			attribute.String("tool_use_id", fmt.Sprintf("toolu_%s_%d", s.id[:8], p)), attribute.String("decision", decision),
			attribute.String("source", "config"))
		// The same request as a delta metric point: the endpoint counts
		// the session's events and not these (one source per session).
		for typ, n := range map[string]int64{"input": in, "output": out, "cacheRead": cr, "cacheCreation": cw} {
			tokens.Add(ctx, float64(n), metric.WithAttributes(attribute.String("session.id", s.id),
				attribute.String("user.email", s.email), attribute.String("model", model), attribute.String("type", typ)))
		}
		t = t.Add(time.Duration(1+s.random.IntN(20)) * time.Minute)
	}
	return nil
}

// demoGemini is Gemini CLI: gemini_cli.api_response events, and the
// cumulative gemini_cli.token.usage.
type demoGemini struct{}

func (demoGemini) name() string                        { return "gemini-cli" }
func (demoGemini) version() string                     { return "0.61.0" }
func (demoGemini) scope() string                       { return "gemini-cli" }
func (demoGemini) metricScope() string                 { return "gemini-cli" }
func (demoGemini) temporality() metricdata.Temporality { return metricdata.CumulativeTemporality }

func (demoGemini) session(ctx context.Context, lg otellog.Logger, m metric.Meter, s demoSession) error {
	tokens, err := m.Int64Counter("gemini_cli.token.usage", metric.WithUnit("token"))
	if err != nil {
		return err
	}
	common := []attribute.KeyValue{attribute.String("session.id", s.id), attribute.String("installation.id", "demo-"+s.id[:8]),
		attribute.Bool("interactive", true), attribute.String("user.email", s.email), attribute.String("auth_type", "oauth-personal")}
	models := []string{"gemini-2.5-pro", "gemini-2.5-flash"}
	t := s.start.Add(30 * time.Minute)
	for p := range 2 + s.random.IntN(3) {
		model := models[s.random.IntN(len(models))]
		cached := int64(s.random.IntN(4000))
		in := cached + int64(100+s.random.IntN(2000)) // input_token_count includes the cached tokens
		out, thoughts, tool := int64(50+s.random.IntN(800)), int64(s.random.IntN(300)), int64(s.random.IntN(50))
		attrs := append([]attribute.KeyValue{attribute.String("event.name", "gemini_cli.api_response"),
			attribute.String("event.timestamp", t.Format("2006-01-02T15:04:05.000Z"))}, common...)
		emitDemo(ctx, lg, t, "", append(attrs, attribute.String("model", model),
			attribute.String("duration_ms", strconv.Itoa(500+s.random.IntN(3000))), attribute.String("input_token_count", strconv.FormatInt(in, 10)),
			attribute.String("output_token_count", strconv.FormatInt(out, 10)), attribute.String("cached_content_token_count", strconv.FormatInt(cached, 10)),
			attribute.String("thoughts_token_count", strconv.FormatInt(thoughts, 10)), attribute.String("tool_token_count", strconv.FormatInt(tool, 10)),
			attribute.String("total_token_count", strconv.FormatInt(in+out+thoughts+tool, 10)),
			attribute.String("prompt_id", fmt.Sprintf("%s-p%d", s.id[:8], p)), attribute.String("status_code", "200"))...)
		for typ, n := range map[string]int64{"input": in, "output": out, "cache": cached, "thought": thoughts, "tool": tool} {
			tokens.Add(ctx, n, metric.WithAttributes(attribute.String("session.id", s.id), attribute.String("installation.id", "demo-"+s.id[:8]),
				attribute.Bool("interactive", true), attribute.String("user.email", s.email), attribute.String("model", model),
				attribute.String("type", typ)))
		}
		t = t.Add(time.Duration(1+s.random.IntN(15)) * time.Minute)
	}
	return nil
}

// startTelemetry creates the Ingestion key and sends, in the background
// and bounded by demoTelemetryTimeout, the generated telemetry to base.
func (d *demoServing) startTelemetry(ctx context.Context, base string) {
	key, err := demoTelemetryKey(ctx, d.ds, d.orgs, d.st.orgID)
	if err != nil {
		d.log.Error(d.e.cmd+": the telemetry key", "error", err)
		return
	}
	d.st.ingestionKey = key
	end, err := demoTelemetryEnd(ctx, d.ds)
	if err != nil {
		d.log.Error(d.e.cmd+": the telemetry's time", "error", err)
		return
	}
	emails := []string{d.st.adminEmail, d.st.reviewerEmail}
	t := demoTarget{base: base, grpc: d.f.otlpGRPC.endpoint, key: key, partial: newDemoPartial()}
	d.telemetry.Go(func() {
		sctx, cancel := context.WithTimeout(d.tctx, demoTelemetryTimeout)
		defer cancel()
		if err := sendDemoTelemetry(sctx, t, end, emails); err != nil {
			d.log.Error(d.e.cmd+": send the demo's telemetry", "error", err)
			return
		}
		attrs := []slog.Attr{slog.String("endpoint", base), slog.String("grpc", t.grpc)}
		if s := t.partial.summary(); s != "" {
			attrs = append(attrs, slog.String("partial", s))
		}
		d.serviceLog.LogAttrs(sctx, slog.LevelInfo, "demo telemetry sent", attrs...)
	})
}
