// Sends telemetry to the kit's endpoint with the OpenTelemetry JavaScript
// SDK's OTLP http/json exporters, the exporters Claude Code itself uses.
// The endpoint and key come from the standard environment variables, as a
// user would set them:
//
//   OTEL_EXPORTER_OTLP_ENDPOINT=http://host:port
//   OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer KEY"
//
// It sends Claude Code api_request log events (session js-s1), Claude Code
// token metrics with delta temporality in two exports (session js-s2, and one
// point in js-s1 that the one-source rule drops), and one GenAI span of
// another tool. It prints each export's outcome and "all sent" on success;
// on a failed export it prints "export failed: HTTP <code>" and exits 1.
import { SeverityNumber } from '@opentelemetry/api-logs';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { AggregationTemporalityPreference, OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

const failures = [];

// recording wraps an exporter to print and keep each export's result (the
// SDK's processors and readers only log failures).
function recording(signal, exporter) {
  return {
    export(items, done) {
      exporter.export(items, (result) => {
        if (result.code === 0) {
          console.log(`${signal}: exported`);
        } else {
          const code = result.error?.code;
          console.log(`${signal}: export failed: HTTP ${code ?? '?'} ${result.error?.message ?? ''}`);
          failures.push(signal);
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    selectAggregationTemporality: exporter.selectAggregationTemporality?.bind(exporter),
    selectAggregation: exporter.selectAggregation?.bind(exporter),
  };
}

const claude = resourceFromAttributes({
  'service.name': 'claude-code',
  'service.version': '2.1.332',
  'os.type': 'linux',
  'user.email': 'Alice@Example.COM',
});
const common = { 'user.id': 'js-device-1', 'organization.id': 'org-js', 'terminal.type': 'vscode' };

async function sendLogs() {
  const provider = new LoggerProvider({
    resource: claude,
    processors: [new BatchLogRecordProcessor({ exporter: recording('logs', new OTLPLogExporter()) })],
  });
  const logger = provider.getLogger('com.anthropic.claude_code.events', '2.1.332');
  const requests = [
    { input_tokens: 100, output_tokens: 250, cache_read_tokens: 1000, cache_creation_tokens: 200, cost_usd: 0.01 },
    { input_tokens: 10, output_tokens: 20, cache_read_tokens: 0, cache_creation_tokens: 0, cost_usd: 0.002 },
    // Claude Code sends some numbers as strings.
    { input_tokens: '7', output_tokens: '3', cache_read_tokens: '0', cache_creation_tokens: '0', cost_usd: 0.001 },
  ];
  const now = Date.now();
  requests.forEach((r, i) => {
    const at = new Date(now - (requests.length - i) * 1000);
    logger.emit({
      timestamp: at,
      severityNumber: SeverityNumber.INFO,
      body: 'claude_code.api_request',
      attributes: {
        'event.name': 'api_request',
        'event.timestamp': at.toISOString(),
        'event.sequence': i + 1,
        'session.id': 'js-s1',
        'prompt.id': `js-p-${i + 1}`,
        ...common,
        model: 'claude-sonnet-4-5',
        request_id: `js-req-${i + 1}`,
        duration_ms: 900,
        ...r,
      },
    });
  });
  await provider.forceFlush();
  await provider.shutdown();
}

async function sendMetrics() {
  const exporter = recording('metrics', new OTLPMetricExporter({
    temporalityPreference: AggregationTemporalityPreference.DELTA,
  }));
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3600000 });
  const provider = new MeterProvider({ resource: claude, readers: [reader] });
  const tokens = provider.getMeter('com.anthropic.claude_code', '2.1.332')
    .createCounter('claude_code.token.usage', { unit: 'tokens' });
  const add = (session, type, n) => tokens.add(n, { 'session.id': session, ...common, type, model: 'claude-sonnet-4-5' });
  add('js-s2', 'input', 40);
  add('js-s2', 'output', 60);
  add('js-s2', 'cacheRead', 5);
  // js-s1 sends api_request events: its metrics are not counted beside them.
  add('js-s1', 'input', 999);
  await provider.forceFlush();
  add('js-s2', 'input', 2);
  add('js-s2', 'output', 8);
  await provider.forceFlush();
  await provider.shutdown();
}

async function sendSpan() {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'js-agent', 'service.version': '1.0.0', 'user.email': 'bob@example.com' }),
    spanProcessors: [new BatchSpanProcessor(recording('traces', new OTLPTraceExporter()))],
  });
  const span = provider.getTracer('js-agent').startSpan('chat gpt-4o', {
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o',
      'gen_ai.usage.input_tokens': 11,
      'gen_ai.usage.output_tokens': 13,
    },
  });
  span.end();
  await provider.forceFlush();
  await provider.shutdown();
}

for (const send of [sendLogs, sendMetrics, sendSpan]) {
  try {
    await send();
  } catch (err) {
    // A reader's flush rejects when its export failed; recorded above.
    console.log(`${send.name}: ${err?.message ?? err}`);
  }
}
if (failures.length > 0) {
  console.log(`export failed for: ${failures.join(', ')}`);
  process.exit(1);
}
console.log('all sent');
