// Package httpclient holds the two rules every HTTP client of the kit
// follows alike: how a Retry-After header is read ([RetryAfter]) and which
// redirects are followed ([SameOrigin]). It imports nothing of the kit, so
// the public packages (spec/webhook, consumer, conformance,
// policy/embeddings) and the service share the one copy.
package httpclient
