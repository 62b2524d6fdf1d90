// Package policy evaluates the text of an AI request against an
// organisation's instructions ([spec.Instruction]): Regex, StringMatch and
// Semantic triggers, Allow and Block actions, redaction. It knows no HTTP and
// no storage; the review-task API (package reviewapi) feeds it the
// instructions assigned to an agent and the messages of a request.
//
// [Compile] turns instructions into a [Set], which is immutable and safe for
// concurrent use; [Set.Evaluate] returns a [Result]: the [Outcome], the
// instructions that matched with their spans (in Unicode code points), and a
// redacted copy of the messages when a Block instruction that allows
// redaction matched. A [Cache] keeps one Set per agent and recompiles it when
// the instructions change:
//
//	cache := policy.NewCache(policy.Options{}, 1000)
//	set, err := cache.Get(agentID, instructions)
//	if err != nil {
//		return err // a pattern that does not compile: a *policy.CompileError
//	}
//	res, err := set.Evaluate(ctx, []string{"Mail jane@example.com the report"})
//	if errors.Is(err, policy.ErrBudgetExceeded) {
//		return escalate(err) // over its time budget: the same again next time, a person decides
//	}
//	if err != nil {
//		return err // the semantic matcher failed: POLICY_ERROR, retry later
//	}
//	switch res.Outcome {
//	case policy.OutcomeApproved:
//	case policy.OutcomeRedacted:
//		send(res.Redacted)
//	case policy.OutcomeChangeRequested, policy.OutcomeRequiresIntervention:
//		report(res.Reasons)
//	}
//
// A StringMatch term matches as a whole word, case-folded unless the trigger
// is case-sensitive; a Set finds all its terms in one pass over each message,
// whatever their number. Regex patterns run on Go's regexp (RE2, linear
// time) and report exactly its matches (FindAllStringIndex, without empty
// matches). Semantic triggers go through a [SemanticMatcher]: the built-in
// [LexicalMatcher] (the default) compares stemmed words and the concepts of a
// table of policy vocabulary in English, German, French and Spanish, without
// any network; [NGramMatcher], the earlier one, compares character n-grams;
// package policy/embeddings asks an OpenAI-compatible embeddings API. A
// matcher that is also a [SemanticScorer] gives each match its similarity, and
// package policy/semeval measures matchers on a labelled set. A
// [JudgingMatcher] says how each match was decided: package policy/judge asks
// a language model about the candidates of a cheaper matcher, and each match
// then carries a verdict and the words the model quoted. An instruction of
// high sensitivity ([spec.Trigger] Sensitivity) matches at the recall
// threshold of a [SensitiveScorer].
//
// Every pattern is checked by [CheckPattern] (the organisation API refuses one
// over its limits), and every evaluation has a time budget
// ([Options.Budget], [DefaultBudget]): past it, Evaluate stops and fails
// with a [*BudgetError].
package policy
