// Package telemetry is the service's telemetry endpoint: AI tools (Claude
// Code, Codex CLI, Gemini CLI, applications following the OpenTelemetry
// GenAI conventions) export OTLP over HTTP to POST /v1/metrics, /v1/logs
// and /v1/traces, authenticated by an Ingestion key of their organisation
// (Authorization: Bearer KEY or X-API-Key). An API key is refused with 403;
// a missing, unknown, revoked or expired key with one 401.
//
// Each Ingestion key is a telemetry source of its organisation, created on
// the key's first accepted request ([Views.EnsureTelemetry]). What a request
// maps to (package tools) is stored idempotently, so that re-sending
// anything, in any order, changes no total:
//
//   - usage (one row per API request or metric point, by its key; a
//     cumulative point as the delta it adds to its run) in telemetry_usage,
//     and the hours it changed marked; a job ([RollupArgs]) computes the
//     marked hours again into hourly usage buckets of the source's collected
//     view, counting each tool's requests once (events over spans over
//     metrics);
//   - events and the tools as assistants, directly into the collected view;
//   - prompt text, only where the key's organisation allows storing it (a
//     setting of package org, off by default, read on each request that
//     carries prompts): in telemetry_prompts, and as one conversation per
//     tool session (its id from [ConversationID]) in the collected view.
//     Otherwise prompt text is dropped on arrival.
package telemetry
