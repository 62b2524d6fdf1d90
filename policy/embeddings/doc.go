// Package embeddings provides a [policy.SemanticMatcher] over an
// OpenAI-compatible embeddings API: segments and queries are embedded by a
// model, and a segment matches a query when the cosine similarity of their
// embeddings reaches a threshold.
//
//	matcher := &embeddings.Client{
//		URL:    "https://api.openai.com/v1/embeddings",
//		Model:  "text-embedding-3-small",
//		APIKey: os.Getenv("OPENAI_API_KEY"),
//	}
//	set, err := policy.Compile(instructions, policy.Options{Semantic: matcher})
//
// Any failure (the service unreachable or slow, a non-2xx status, an answer
// that does not parse or does not fit the request) is an error, which makes
// [policy.Set.Evaluate] fail: the review-task API then reports POLICY_ERROR
// and the task stays retryable.
package embeddings
