// Package httpclient holds the rules every HTTP client of the kit follows
// alike: how a Retry-After header is read ([RetryAfter]), which redirects
// are followed ([SameOrigin]), and, for the consumer's transports, which
// failures are retried ([Transient]) after how long a wait ([Backoff]). It imports nothing of the kit, so
// the public packages (spec/webhook, consumer, conformance,
// policy/embeddings) and the service share the one copy.
package httpclient
