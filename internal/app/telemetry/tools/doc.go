// Package tools maps the OpenTelemetry that AI tools export (Claude Code,
// Codex CLI, Gemini CLI, GitHub Copilot, LiteLLM and anything following the
// OpenTelemetry GenAI semantic conventions) to usage observations.
//
// It is pure: [Logs], [Metrics] and [Traces] take a decoded OTLP export
// request and return a [Batch], and never fail. What maps to nothing is
// counted in [Batch.Unmapped] with a [Reason]. Storage, HTTP and
// authentication are the caller's.
//
// Three rules make totals exact when a store applies them:
//
//   - Every [Usage], [Event] and [Prompt] has a Key unique to the real-world
//     occurrence, so storing a re-sent payload again changes nothing.
//   - One source per tool and session: [Dedup] keeps event-origin usage over
//     span-origin usage over metric-origin usage.
//   - A cumulative metric point carries a running total; an [Accumulator]
//     turns a series of them into deltas, treating a new start time or a
//     lower value as a reset.
//
// docs/telemetry.md describes the mapping of each tool field by field.
package tools
