// Package judge decides Semantic instructions by meaning: a cheap matcher
// picks candidate sentences, and a judge, a language model behind an
// OpenAI-compatible chat completions endpoint, says of each whether it says
// what the instruction describes, quoting the words that do.
//
// [Client] asks one question; [Cascade] is the [policy.JudgingMatcher] a
// [policy.Set] uses:
//
//	c := &judge.Cascade{Client: &judge.Client{
//		URL:   "http://localhost:11434/v1/chat/completions",
//		Model: "qwen2.5:7b-instruct",
//	}}
//	set, err := policy.Compile(instructions, policy.Options{Semantic: c})
//
// A judge that cannot be reached is an error ([*UnavailableError]): the
// evaluation fails and is run again later; nothing is approved because a
// model was down.
package judge
