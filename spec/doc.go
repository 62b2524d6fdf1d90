// Package spec holds the wire format of the three interfaces of the aiusage
// kit: the AI usage data interface that software vendors expose
// (conversations, usage buckets, assistants, events and their list envelope),
// the organisation API (organisations, agents, instructions) and the
// review-task API (review tasks, webhooks), with the two error bodies
// ([Problem] and [ReviewError]), and the manifest and index of a scheduled
// export of the AI usage data interface ([ExportManifest], [ExportIndex]).
//
// It provides three things:
//
//   - Go types for every resource, for example [Conversation], [List],
//     [Instruction] and [ReviewTask]. Timestamps are [Time]: written in UTC
//     with milliseconds and an uppercase Z.
//   - JSON Schemas (draft 2020-12) for every resource, embedded in the binary
//     ([SchemaFS], [SchemaJSON]), and [Validate], which reports each problem
//     of a document as a [Finding] with its JSON pointer. Identifiers and the
//     primary timestamp are required; every other field is optional; the
//     usage-data resources accept unknown properties, because the
//     specification lets fields be added at any time.
//   - OpenAPI 3.1 documents for the three interfaces ([OpenAPI]).
//
// The push transport's body, records of one resource a provider POSTs to a
// receiver, is [PushDelivery] (schema push-delivery, [DecodePushDelivery]);
// package spec/webhook signs and verifies it.
//
// Validating a page received from a provider:
//
//	findings, err := spec.Validate("conversation-list", body)
//	if err != nil {
//		return err // unknown schema or not JSON
//	}
//	for _, f := range findings {
//		fmt.Printf("%s: %s\n", f.Pointer, f.Message)
//	}
//	if !spec.Valid(findings) {
//		// at least one error; warnings alone leave the page valid
//	}
//
// Enum values that a later version of the specification may add (a message
// role, an event category, ...) are marked "x-extensible-enum" in the
// schemas. [Strict] mode, the default, reports an unknown value as a
// [LevelWarning]; [Lenient] mode accepts it silently.
//
// [ValidateValue] is cheap enough to run on every record a consumer
// receives (conversation, assistant, event, usage-bucket); its findings
// always come from the JSON Schema library.
//
// JSON Schema's date-time format accepts offsets and lowercase letters; the
// specification wants UTC. [Validate] and [CheckTimestamp] insist on the
// uppercase Z.
//
// spec imports no other package of the kit but its own internal ones.
package spec
