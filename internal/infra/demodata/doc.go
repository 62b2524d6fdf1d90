// Package demodata generates a realistic organisation's AI use from a seed:
// departments and users, custom assistants with skills, connectors and
// knowledge, multi-turn conversations with tool calls and attachments,
// per-request usage records that add up to each conversation's usage, an
// audit trail in every event category, deleted conversations, and groups of
// records that share one timestamp exactly, so that keyset pagination's tie
// handling is exercised.
//
// The output is deterministic: the same [Config] gives the same records, byte
// for byte. [Generate] builds a [Dataset] in memory; [Stream] and [Fill]
// produce the same records one at a time, for sizes such as the 100,000
// conversations of the benchmarks:
//
//	d, err := demodata.Generate(demodata.Config{Seed: 1, Conversations: 2000})
//	if err != nil {
//		return err
//	}
//	err = d.Load(ctx, "acme", store) // any provider.Writer
//
//	// or, without holding the dataset:
//	err = demodata.Fill(ctx, demodata.Config{Seed: 1, Conversations: 100_000}, "acme", store)
//
// What the data looks like, for Config{Conversations: N} with the defaults:
//
//   - N/20 users (10..20,000) in up to 11 departments, emails at
//     "<tenant>.example", groups per department, team and region; a few
//     heavy users do much of the work.
//   - Users/8 assistants (12..300) built from 20 profiles ("Contract
//     Reviewer", "Support Triage", ...), each with skills of the four types,
//     connectors with scopes, knowledge items, an owner and one of the four
//     visibilities; about a fifth archived. Their usage rollup (conversationCount,
//     userCount, lastUsedAt) counts every conversation that used them, deleted
//     ones included, and lastUsedAt is the time of the last usage record.
//   - N conversations over the 60 days before End, mostly on weekday working
//     hours: 2..12 messages (system, user, assistant and tool), tool calls
//     listed in tools, uploaded and generated attachments with SHA-256
//     hashes, models of five vendors, parameters, a system prompt or its hash,
//     a status and metadata. About 1.7 KB of JSON each on average.
//   - One usage record per assistant message, at that message's time: the
//     conversation's input and output tokens are exactly the sums of its
//     records'; costs are whole micro-dollars, so the cost sums agree to
//     within [CostTolerance].
//   - About 3% of conversations deleted (Dataset.Deleted), some by their user,
//     some by a weekly retention sweep that deletes many at one instant.
//   - About 5% of conversations in groups of 2..20 sharing one updatedAt (a
//     bulk relabel), assistants in groups sharing updatedAt, and bursts of
//     events sharing occurredAt.
//   - N/4 audit events (at least 64) from a catalogue of native event types in
//     all eight categories and all four actor types, some not in the
//     specification's examples ("billing.invoice.paid", "BILLING_PLAN_CHANGED",
//     "api_key.rotated", "seat.assigned"); their native type is kept verbatim
//     and their action mapped to the closest value of the schema's enum
//     ("assistant.archived" is "Disabled", "api_key.rotated" and
//     "seat.assigned" are "Updated"); plus an event for every assistant
//     created in the window or archived, every deletion and every provisioned
//     user.
//
// Every conversation, tombstone, assistant and event validates against the
// kit's schemas without a finding, not even a warning: the data is an example
// of a clean provider.
package demodata
