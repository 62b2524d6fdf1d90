// Package bench holds the kit's end-to-end benchmarks, which need several
// packages at once (the provider handler over sqlsource, filled by
// demodata; the organisation API over a SQLite file). It has no code of its
// own: run them with make bench.
//
// Targets are ratios measured in one run, so they hold on any machine:
//
//   - BenchmarkConversationsThroughput: pages of /conversations?limit=100
//     over HTTP on loopback, from 100,000 generated conversations in SQLite,
//     reach at least 0.5 of the throughput of a plain net/http handler
//     writing the same pre-encoded page bytes (metric "x-static").
//   - BenchmarkConversationsDepth: a page at 90% depth costs at most 1.3
//     times the first page (metric "x-first-page").
//   - BenchmarkUsage30Days: /usage?granularity=day&groupBy=model,department
//     over 30 days answers in under 200 ms (metric "ms/op").
//   - BenchmarkInstructionList: the organisation API lists 10,000
//     instructions of one organisation in SQLite, over HTTP, with search and
//     filters, in under 50 ms (metric "ms/list").
//   - BenchmarkInstructionCreate: the organisation API creates at least 500
//     instructions a second in SQLite, over HTTP (metric "creates/s").
//   - BenchmarkPolicyEvaluate: policy evaluates a 10 KB request (four
//     messages) against 100 instructions (50 Regex, 50 StringMatch lists of
//     100 terms) at least 2,000 times a second on one goroutine (metric
//     "evals/s").
//   - BenchmarkPolicyStringMatch: the 50 StringMatch lists compiled into one
//     Set are at least 10 times faster than a naive loop of strings.Index
//     per term over the same request (metric "x-naive").
//
// BenchmarkPolicyCompile reports what recompiling those 100 instructions
// costs (metric "ms/compile"); it has no target.
//   - BenchmarkReviewTaskCreate: the review-task API accepts and evaluates at
//     least 300 tasks a second in SQLite, over HTTP (metric "tasks/s").
//   - BenchmarkReviewWebhookLatency: the median time from a task's final
//     decision to its task.completed webhook arriving is under 200 ms
//     (metric "median-ms").
//   - BenchmarkTelemetryLogs: the telemetry endpoint stores at least 20,000
//     Claude Code log records a second into SQLite from one client sending
//     protobuf requests of 1,000 records over HTTP (metric "records/s").
//   - BenchmarkTelemetryLargeRequest: a request just under the 20 MiB body
//     limit allocates a bounded multiple of its body (metrics "alloc/body"
//     and "heap-MB").
package bench
