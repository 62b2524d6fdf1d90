package spec

import "encoding/json"

// Review task statuses. Approved, rejected and change_requested are final.
const (
	StatusPending              = "pending"
	StatusProcessing           = "processing"
	StatusApproved             = "approved"
	StatusRequiresIntervention = "requires_intervention"
	StatusRejected             = "rejected"
	StatusChangeRequested      = "change_requested"
)

// Review task webhook event types.
const (
	EventTaskCreated              = "task.created"
	EventTaskRequiresIntervention = "task.requires_intervention"
	EventTaskCompleted            = "task.completed"
	EventTaskTimeout              = "task.timeout"
)

// WebhookEventTypes lists every webhook event type.
var WebhookEventTypes = []string{EventTaskCreated, EventTaskRequiresIntervention, EventTaskCompleted, EventTaskTimeout}

// Who made a review task's decision.
const (
	DecidedByPolicy   = "policy"
	DecidedByReviewer = "reviewer"
	DecidedBySystem   = "system"
)

// ReviewTaskCreate is the body of POST /review-tasks.
type ReviewTaskCreate struct {
	AgentID    string          `json:"agentId"`
	Request    ReviewRequest   `json:"request"`
	User       *User           `json:"user,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	ExternalID string          `json:"externalId,omitempty"`
}

// ReviewRequest is the AI request under review. Every message's content is
// evaluated. Other members of the request (sampling parameters and the like)
// are kept in Extra and written back as received.
type ReviewRequest struct {
	Model    string          `json:"model,omitempty"`
	Messages []ReviewMessage `json:"messages"`
	// Extra holds every other member, preserved as received.
	Extra map[string]json.RawMessage `json:"-"`
}

// ReviewMessage is one message of a reviewed request. Members other than role
// and content (a name, a tool call id, ...) are kept in Extra.
type ReviewMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Extra holds every other member, preserved as received.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON implements [json.Marshaler], merging Extra and writing a nil
// Messages as [].
func (r ReviewRequest) MarshalJSON() ([]byte, error) {
	type plain ReviewRequest
	if r.Messages == nil {
		r.Messages = []ReviewMessage{}
	}
	return marshalMerged(plain(r), r.Extra)
}

// UnmarshalJSON implements [json.Unmarshaler], keeping other members in Extra.
func (r *ReviewRequest) UnmarshalJSON(b []byte) error {
	type plain ReviewRequest
	var p plain
	extra, err := unmarshalExtra(b, &p, "model", "messages")
	if err != nil {
		return err
	}
	*r = ReviewRequest(p)
	r.Extra = extra
	return nil
}

// MarshalJSON implements [json.Marshaler], merging Extra.
func (m ReviewMessage) MarshalJSON() ([]byte, error) {
	type plain ReviewMessage
	return marshalMerged(plain(m), m.Extra)
}

// UnmarshalJSON implements [json.Unmarshaler], keeping other members in Extra.
func (m *ReviewMessage) UnmarshalJSON(b []byte) error {
	type plain ReviewMessage
	var p plain
	extra, err := unmarshalExtra(b, &p, "role", "content")
	if err != nil {
		return err
	}
	*m = ReviewMessage(p)
	m.Extra = extra
	return nil
}

// ReviewTask is an AI request submitted for approval.
type ReviewTask struct {
	ID              string          `json:"id"`
	AgentID         string          `json:"agentId,omitempty"`
	Status          string          `json:"status"`
	Request         *ReviewRequest  `json:"request,omitempty"`
	RedactedRequest *ReviewRequest  `json:"redactedRequest,omitempty"`
	Reasons         []ReviewReason  `json:"reasons,omitempty"`
	Decision        *ReviewDecision `json:"decision,omitempty"`
	User            *User           `json:"user,omitempty"`
	Metadata        json.RawMessage `json:"metadata,omitempty"`
	ExternalID      string          `json:"externalId,omitempty"`
	ReviewDeadline  Time            `json:"reviewDeadline,omitzero"`
	CreatedAt       Time            `json:"createdAt"`
	UpdatedAt       Time            `json:"updatedAt,omitzero"`
	CompletedAt     Time            `json:"completedAt,omitzero"`
}

// ReviewReason is an instruction that matched a reviewed request.
type ReviewReason struct {
	InstructionID string      `json:"instructionId"`
	Title         string      `json:"title"`
	Action        string      `json:"action"`
	Criticality   string      `json:"criticality"`
	Matches       []MatchSpan `json:"matches,omitempty"`
	// Exempted, on an Allow instruction, lists the Block instructions of
	// which it exempted at least one match (their text lay within its own).
	// An Allow instruction of High criticality that exempted anything is a
	// person-level exemption: the task's decision then has reason
	// "exemption".
	Exempted []string `json:"exempted,omitempty"`
}

// MatchSpan is the half-open span [Start, End) of a match, in Unicode code
// points, within the content of request message MessageIndex.
type MatchSpan struct {
	MessageIndex int `json:"messageIndex"`
	Start        int `json:"start"`
	End          int `json:"end"`
	// Text is the text of a Semantic match: the sentence (or window of a
	// long sentence) the matcher found similar, so a reviewer sees why.
	Text string `json:"text,omitempty"`
	// Similarity is the matcher's score of a Semantic match, in (0, 1].
	// With a judge, it is the score of the matcher that picked the sentence
	// as a candidate.
	Similarity float64 `json:"similarity,omitempty"`
	// Quote is, on a Semantic match a judge (a language model) confirmed
	// (Verdict VerdictJudge), the words it quoted as saying what the
	// instruction describes: verbatim from Text.
	Quote string `json:"quote,omitempty"`
	// Verdict says how a Semantic match was decided when a judge is
	// configured: one of the Verdict constants. Empty for the match of a
	// matcher alone (built-in or embeddings).
	Verdict string `json:"verdict,omitempty"`
}

// Verdicts of a Semantic [MatchSpan] decided with a judge.
const (
	// VerdictJudge: the judge said the sentence says what the instruction
	// describes, quoting the words that do (Quote).
	VerdictJudge = "judge"
	// VerdictUnexamined: a candidate sentence beyond the judge calls allowed
	// per request; counted as a match so that nothing is waved through
	// unexamined.
	VerdictUnexamined = "unexamined"
	// VerdictNoAnswer: the judge's answer did not parse, or quoted words
	// that are not in the sentence.
	VerdictNoAnswer = "no-answer"
	// VerdictInjection: the sentence addresses the judge (tries to instruct
	// it); it is never sent, and is a match for a person to see.
	VerdictInjection = "injection"
)

// ReviewDecision says how a task reached its current decision.
type ReviewDecision struct {
	By string `json:"by"`
	// Reviewer names the person who decided (by reviewer): their email.
	Reviewer string `json:"reviewer,omitempty"`
	// ReviewerID is the user id of that person.
	ReviewerID string `json:"reviewerId,omitempty"`
	// Choice is what a person chose (by reviewer), or what the review
	// timeout applied (by system): one of the Choice constants.
	Choice    string `json:"choice,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Comment   string `json:"comment,omitempty"`
	DecidedAt Time   `json:"decidedAt"`
}

// Choices of a decision on a task waiting for a person
// ([ReviewDecision.Choice]).
const (
	// ChoiceApprove approves the request as it was sent.
	ChoiceApprove = "approve"
	// ChoiceApproveRedacted approves the redacted copy the policy proposed
	// (the task's redactedRequest); only when there is one.
	ChoiceApproveRedacted = "approve-redacted"
	// ChoiceReject rejects the request.
	ChoiceReject = "reject"
	// ChoiceRequestChanges asks the requester to change the request.
	ChoiceRequestChanges = "request-changes"
)

// Reasons of a decision ([ReviewDecision.Reason]).
const (
	// ReasonTimeout: the review timeout passed before a person decided;
	// the organisation's timeout outcome was applied (by system).
	ReasonTimeout = "timeout"
	// ReasonExemption: approved by policy because an Allow instruction of
	// High criticality exempted what a Block instruction matched.
	ReasonExemption = "exemption"
	// ReasonBudget: the policy could not decide within its evaluation time
	// budget (or an instruction's pattern is over the cost limits), so the
	// task waits for a person (requires_intervention, by policy); the
	// decision's comment says where the budget ran out.
	ReasonBudget = "budget"
)

// ReviewTaskList is the answer of GET /review-tasks. Its tasks leave out
// request and redactedRequest unless asked for with include=request.
type ReviewTaskList struct {
	Data   []ReviewTask `json:"data"`
	Total  int          `json:"total"`
	Limit  int          `json:"limit"`
	Offset int          `json:"offset"`
	// NextOffset is the offset of the next page (offset plus the tasks of
	// this one) while tasks remain, else null. A page holds fewer than
	// limit tasks when their JSON would pass the page's byte budget.
	NextOffset *int `json:"nextOffset"`
}

// WebhookCreate is the body of POST /webhooks.
type WebhookCreate struct {
	URL         string   `json:"url"`
	Events      []string `json:"events,omitempty"`
	Description string   `json:"description,omitempty"`
}

// Webhook is a registered webhook receiver. Secret is set only in the answer
// of its creation, ConsecutiveFailures only in listings and GET /webhooks/{id}.
type Webhook struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description,omitempty"`
	CreatedAt   Time     `json:"createdAt"`
	Secret      string   `json:"secret,omitempty"`
	// ConsecutiveFailures counts the delivery attempts to the webhook that
	// failed in a row, since its last success; past a few, its attempts
	// have a shorter timeout and its retries wait longer.
	ConsecutiveFailures *int `json:"consecutiveFailures,omitempty"`
}

// WebhookList is the answer of GET /webhooks.
type WebhookList struct {
	Data []Webhook `json:"data"`
}

// WebhookDelivery is the body POSTed to a webhook receiver.
type WebhookDelivery struct {
	Type      string     `json:"type"`
	Timestamp Time       `json:"timestamp"`
	Data      ReviewTask `json:"data"`
}

// Review-task error codes.
const (
	CodeAuthenticationFailed = "AUTHENTICATION_FAILED"
	CodeRateLimitExceeded    = "RATE_LIMIT_EXCEEDED"
	CodeInvalidRequest       = "INVALID_REQUEST"
	CodeTaskNotFound         = "TASK_NOT_FOUND"
	CodePolicyError          = "POLICY_ERROR"
	CodeForbidden            = "FORBIDDEN"
	CodeNotFound             = "NOT_FOUND"
	CodeMethodNotAllowed     = "METHOD_NOT_ALLOWED"
	CodeInternalError        = "INTERNAL_ERROR"
	CodePayloadTooLarge      = "PAYLOAD_TOO_LARGE"
	CodeUnavailable          = "UNAVAILABLE"
)

// ReviewError is the error body of the review-task API.
type ReviewError struct {
	Error ReviewErrorDetail `json:"error"`
}

// ReviewErrorDetail is the content of a [ReviewError].
type ReviewErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	// TaskID names the task a POLICY_ERROR kept: it stays pending and is
	// evaluated again.
	TaskID string `json:"taskId,omitempty"`
}
