package spec_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/aiusage/kit/spec"
)

// Fully populated Go values of every wire type. Between them, the values of
// each type set every field (fullValueCases checks that by reflection), so a
// field added to a type without a value here fails the tests.

func ts(s string) spec.Time {
	t, err := spec.ParseTime(s)
	if err != nil {
		panic(err)
	}
	return spec.NewTime(t)
}

func ptr[T any](v T) *T { return &v }

func fullUser() *spec.User {
	return &spec.User{
		ID:         "u_8f2c1a",
		Email:      "ada.lovelace@example.com",
		Department: "Research",
		Groups:     []string{"research", "ml-platform"},
	}
}

func fullParameters() *spec.Parameters {
	return &spec.Parameters{
		Temperature: ptr(0.7),
		TopP:        ptr(0.95),
		MaxTokens:   ptr(int64(4096)),
		Extra:       map[string]json.RawMessage{"presencePenalty": json.RawMessage(`0.2`), "stop": json.RawMessage(`["\n\nHuman:"]`)},
	}
}

// fullConversation returns conversation n of a realistic page; every field is
// set.
func fullConversation(n int) spec.Conversation {
	start := time.Date(2026, 3, 9, 8, 15, 0, 0, time.UTC).Add(time.Duration(n) * 7 * time.Minute)
	at := func(d time.Duration) spec.Time { return spec.NewTime(start.Add(d)) }
	return spec.Conversation{
		ID:               fmt.Sprintf("conv_%06d", n),
		ConversationID:   fmt.Sprintf("thread_%04d", n/3),
		StartedAt:        at(0),
		UpdatedAt:        at(95*time.Second + 250*time.Millisecond),
		DeletedAt:        at(48 * time.Hour),
		User:             fullUser(),
		Assistant:        &spec.AssistantRef{ID: "asst_contracts", Name: "Contract reviewer"},
		Model:            "claude-sonnet-4-5",
		ModelProvider:    "anthropic",
		Parameters:       fullParameters(),
		SystemPrompt:     "You are a careful assistant for the legal team. Cite the clause you rely on.",
		SystemPromptHash: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Messages: []spec.Message{
			{ID: "msg_1", Role: spec.RoleSystem, Content: "You are a careful assistant for the legal team.", CreatedAt: at(0)},
			{ID: "msg_2", Role: spec.RoleUser, Content: "Summarise the termination clause of the attached supplier agreement and flag anything unusual about notice periods.", CreatedAt: at(time.Second)},
			{ID: "msg_3", Role: spec.RoleAssistant, Content: "I'll search the contract for the termination clause first.", CreatedAt: at(3 * time.Second)},
			{ID: "msg_4", Role: spec.RoleTool, Content: `{"matches":[{"clause":"14.2","text":"Either party may terminate with 30 days' written notice."}]}`, CreatedAt: at(4 * time.Second)},
			{ID: "msg_5", Role: spec.RoleAssistant, Content: "Clause 14.2 allows either party to terminate with 30 days' written notice. That is shorter than the 90 days in your standard template, so it is worth flagging to procurement.", CreatedAt: at(9 * time.Second)},
		},
		Tools: []spec.Tool{
			{ID: "tool_search", Name: "document_search", Type: "function"},
			{ID: "tool_web", Name: "web_search", Type: "builtin"},
		},
		Attachments: []spec.Attachment{
			{ID: "att_1", Kind: spec.AttachmentUploaded, Filename: "supplier-agreement-2026.pdf", MimeType: "application/pdf", Hash: "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"},
			{ID: "att_2", Kind: spec.AttachmentGenerated, Filename: "termination-summary.md", MimeType: "text/markdown", Hash: "sha256:fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9"},
		},
		Usage:    &spec.TokenUsage{InputTokens: 5120 + int64(n), OutputTokens: 812, TotalTokens: 5932 + int64(n), Cost: 0.02756},
		Status:   "completed",
		Metadata: json.RawMessage(`{"workspace":"legal","client":{"name":"web","version":"4.2.1"},"retention":"90d"}`),
	}
}

func fullUsageBucket() spec.UsageBucket {
	return spec.UsageBucket{
		StartAt:     ts("2026-03-09T00:00:00Z"),
		EndAt:       ts("2026-03-10T00:00:00Z"),
		Granularity: spec.GranularityDay,
		Dimensions: spec.UsageDimensions{
			Model:       ptr("claude-sonnet-4-5"),
			AssistantID: ptr("asst_contracts"),
			UserID:      ptr("u_8f2c1a"),
			Department:  ptr("Research"),
		},
		Metrics: spec.UsageMetrics{Requests: 1840, Conversations: 212, ActiveUsers: 37, InputTokens: 2_481_004, OutputTokens: 391_220, Cost: 13.27},
	}
}

func fullAssistant() spec.Assistant {
	return spec.Assistant{
		ID:               "asst_contracts",
		Name:             "Contract reviewer",
		Description:      "Reviews supplier contracts against the legal team's playbook.",
		Status:           "active",
		CreatedAt:        ts("2025-11-02T10:00:00.000Z"),
		UpdatedAt:        ts("2026-03-01T16:42:10.512Z"),
		Owner:            fullUser(),
		Visibility:       spec.VisibilityTeam,
		Model:            "claude-sonnet-4-5",
		Parameters:       fullParameters(),
		Instructions:     "Compare every clause with the playbook and list deviations.",
		InstructionsHash: "sha256:3a6eb0790f39ac87c94f3856b2dd2c5d110e6811602261a9a923d3bb23adc8b7",
		Skills: []spec.Skill{
			{ID: "skill_search", Name: "Document search", Type: spec.SkillBuiltin},
			{ID: "skill_jira", Name: "Jira", Type: spec.SkillMCP},
			{ID: "skill_redline", Name: "Redline", Type: spec.SkillPlugin},
			{ID: "skill_lookup", Name: "lookup_supplier", Type: spec.SkillFunction},
		},
		Connectors: []spec.Connector{
			{ID: "conn_gdrive", Type: "google-drive", Scopes: []string{"drive.readonly"}},
			{ID: "conn_sharepoint", Type: "sharepoint", Scopes: []string{"Sites.Read.All", "Files.Read.All"}},
		},
		Knowledge: []spec.KnowledgeItem{
			{ID: "kn_playbook", Name: "Contract playbook 2026", Type: "file", MimeType: "application/pdf", Hash: "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", SizeBytes: 482_113, URI: "https://files.example.com/kn_playbook.pdf"},
		},
		Usage: &spec.AssistantUsage{ConversationCount: 1204, UserCount: 41, LastUsedAt: ts("2026-03-09T08:17:01.003Z")},
	}
}

func fullEvent() spec.Event {
	return spec.Event{
		ID:         "evt_01HQ3Z8K2M",
		OccurredAt: ts("2026-03-09T09:12:44.120Z"),
		Type:       "assistant.knowledge.file_added",
		Actor:      &spec.Actor{Type: spec.ActorUser, ID: "u_8f2c1a", Email: "ada.lovelace@example.com"},
		Category:   spec.CategoryResourceLifecycle,
		Action:     "Created",
		Target:     &spec.Target{Kind: "file", ID: "kn_playbook", Name: "Contract playbook 2026"},
		Payload:    json.RawMessage(`{"assistant_id":"asst_contracts","file":{"id":"kn_playbook","bytes":482113},"ip":"203.0.113.7"}`),
	}
}

const (
	orgID        = "6f1c2b7e-3d44-4c5a-9e1f-0a2b3c4d5e6f"
	agentID      = "0b9e8d7c-6a5f-4e3d-8c2b-1a0f9e8d7c6b"
	agentID2     = "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d"
	instrID      = "c3d4e5f6-a7b8-4c9d-8e0f-1a2b3c4d5e6f"
	instrID2     = "d4e5f6a7-b8c9-4d0e-9f1a-2b3c4d5e6f70"
	instrID3     = "e5f6a7b8-c9d0-4e1f-8a2b-3c4d5e6f7081"
	userID       = "f6a7b8c9-d0e1-4f2a-9b3c-4d5e6f708192"
	categoryID   = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"
	taskID       = "7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918"
	webhookID    = "2f3e4d5c-6b7a-4890-a1b2-c3d4e5f60718"
	assessmentID = "assess_2026_q1_pii"
)

func fullOrganisation() spec.Organisation {
	return spec.Organisation{ID: orgID, Name: "Northwind Traders"}
}

func fullAgent() spec.Agent {
	return spec.Agent{ID: agentID, Name: "Data protection agent (EU)", Type: spec.AgentTypeDataProtection, InstructionCount: 12}
}

func fullTriggers() []spec.Trigger {
	return []spec.Trigger{
		{Type: spec.TriggerRegex, Pattern: `\b[A-Z]{2}[0-9]{2}(?: ?[0-9A-Z]{4}){3,7}\b`, IsCaseSensitive: ptr(false)},
		{Type: spec.TriggerStringMatch, Values: []string{"Project Falcon", "Falcon merger"}, IsCaseSensitive: ptr(true)},
		{Type: spec.TriggerSemantic, Text: "Discussion of unannounced quarterly financial results", Sensitivity: spec.SensitivityHigh},
	}
}

func fullInstructions() []spec.Instruction {
	var out []spec.Instruction
	for i, tr := range fullTriggers() {
		in := spec.Instruction{
			ID:             instrID,
			AgentType:      spec.AgentTypeDataProtection,
			Title:          "Block IBANs in prompts",
			Trigger:        tr,
			Action:         spec.ActionBlock,
			Criticality:    spec.CriticalityHigh,
			CategoryID:     ptr(categoryID),
			UsedBy:         []string{agentID, agentID2},
			AllowRedaction: tr.Type != spec.TriggerSemantic,
			AssessmentID:   ptr(assessmentID),
			CreatedAt:      ts("2026-02-14T09:30:00.000Z"),
			UpdatedAt:      ts("2026-03-01T11:05:27.314Z"),
		}
		if i == 1 {
			in.Action, in.Criticality = spec.ActionAllow, spec.CriticalityLow
		}
		out = append(out, in)
	}
	return out
}

func fullInstructionCreates() []spec.InstructionCreate {
	var out []spec.InstructionCreate
	for _, in := range fullInstructions() {
		out = append(out, spec.InstructionCreate{
			AgentType:      in.AgentType,
			Title:          in.Title,
			Trigger:        in.Trigger,
			Action:         in.Action,
			Criticality:    in.Criticality,
			CategoryID:     in.CategoryID,
			UsedBy:         in.UsedBy,
			AllowRedaction: in.AllowRedaction,
			AssessmentID:   in.AssessmentID,
		})
	}
	return out
}

func fullInstructionPatches() []spec.InstructionPatch {
	tr := fullTriggers()
	return []spec.InstructionPatch{
		{
			AgentType:      ptr(spec.AgentTypeDataProtection),
			Title:          ptr("Block IBANs and card numbers"),
			Trigger:        &tr[0],
			Action:         ptr(spec.ActionBlock),
			Criticality:    ptr(spec.CriticalityLow),
			CategoryID:     spec.Some(categoryID),
			UsedBy:         &[]string{agentID},
			AllowRedaction: ptr(true),
			AssessmentID:   spec.Some(assessmentID),
		},
		// Clearing both nullable fields and changing the trigger.
		{Trigger: &tr[1], CategoryID: spec.Null[string](), AssessmentID: spec.Null[string]()},
		{Trigger: &tr[2], AllowRedaction: ptr(false)},
		// An edited copy of a fetched instruction: its read-only fields sent back.
		{ID: ptr(instrID), Title: ptr("Renamed"), CreatedAt: ptr(ts("2026-03-02T09:14:05.120Z")),
			UpdatedAt: ptr(ts("2026-03-09T10:02:13.771Z"))},
	}
}

func fullInstructionList() spec.InstructionList {
	return spec.InstructionList{Items: fullInstructions(), TotalCount: 23, Page: 2, PageSize: 3}
}

func fullReviewRequest() *spec.ReviewRequest {
	return &spec.ReviewRequest{
		Model: "gpt-4.1",
		Messages: []spec.ReviewMessage{
			{Role: "system", Content: "You draft customer emails."},
			{Role: "user", Content: "Refund the customer to IBAN DE89 3704 0044 0532 0130 00 and confirm by email.",
				Extra: map[string]json.RawMessage{"name": json.RawMessage(`"ana"`)}},
		},
		Extra: map[string]json.RawMessage{"temperature": json.RawMessage(`0.2`)},
	}
}

func fullReviewTask() spec.ReviewTask {
	return spec.ReviewTask{
		ID:      taskID,
		AgentID: agentID,
		Status:  spec.StatusApproved,
		Request: fullReviewRequest(),
		RedactedRequest: &spec.ReviewRequest{
			Model: "gpt-4.1",
			Messages: []spec.ReviewMessage{
				{Role: "system", Content: "You draft customer emails."},
				{Role: "user", Content: "Refund the customer to IBAN [REDACTED] and confirm by email.",
					Extra: map[string]json.RawMessage{"name": json.RawMessage(`"ana"`)}},
			},
			Extra: map[string]json.RawMessage{"temperature": json.RawMessage(`0.2`)},
		},
		Reasons: []spec.ReviewReason{{
			InstructionID: instrID,
			Title:         "Block IBANs in prompts",
			Action:        spec.ActionBlock,
			Criticality:   spec.CriticalityLow,
			Matches:       []spec.MatchSpan{{MessageIndex: 1, Start: 29, End: 56}},
		}, {
			InstructionID: instrID2,
			Title:         "Refunds to customers are fine",
			Action:        spec.ActionAllow,
			Criticality:   spec.CriticalityHigh,
			Matches: []spec.MatchSpan{{MessageIndex: 1, Start: 0, End: 78,
				Text: "Refund the customer to IBAN DE89 3704 0044 0532 0130 00 and confirm by email.", Similarity: 0.83,
				Quote: "Refund the customer", Verdict: spec.VerdictJudge}},
			Exempted: []string{instrID3},
		}},
		Decision: &spec.ReviewDecision{
			By:         spec.DecidedByReviewer,
			Reviewer:   "grace.hopper@example.com",
			ReviewerID: userID,
			Choice:     spec.ChoiceApproveRedacted,
			Reason:     "redacted",
			Comment:    "Fine once the IBAN is masked.",
			DecidedAt:  ts("2026-03-09T10:02:13.771Z"),
		},
		User:           fullUser(),
		Metadata:       json.RawMessage(`{"ticket":"SUP-4412","channel":"email"}`),
		ExternalID:     "req-2026-03-09-0001",
		ReviewDeadline: ts("2026-03-10T09:58:00.000Z"),
		CreatedAt:      ts("2026-03-09T09:58:00.000Z"),
		UpdatedAt:      ts("2026-03-09T10:02:13.771Z"),
		CompletedAt:    ts("2026-03-09T10:02:13.771Z"),
	}
}

func fullReviewTaskCreate() spec.ReviewTaskCreate {
	return spec.ReviewTaskCreate{
		AgentID:    agentID,
		Request:    *fullReviewRequest(),
		User:       fullUser(),
		Metadata:   json.RawMessage(`{"ticket":"SUP-4412"}`),
		ExternalID: "req-2026-03-09-0001",
	}
}

func fullReviewTaskList() spec.ReviewTaskList {
	next := 41
	return spec.ReviewTaskList{Data: []spec.ReviewTask{fullReviewTask()}, Total: 57, Limit: 20, Offset: 40, NextOffset: &next}
}

func fullWebhookCreate() spec.WebhookCreate {
	return spec.WebhookCreate{
		URL:         "https://hooks.example.com/aiusage/review",
		Events:      []string{spec.EventTaskRequiresIntervention, spec.EventTaskCompleted},
		Description: "Review notifications for the support tooling",
	}
}

// fullWebhook is a registered webhook as listed: without its secret.
func fullWebhook() spec.Webhook {
	return spec.Webhook{
		ID:                  webhookID,
		URL:                 "https://hooks.example.com/aiusage/review",
		Events:              []string{spec.EventTaskRequiresIntervention, spec.EventTaskCompleted},
		Description:         "Review notifications for the support tooling",
		CreatedAt:           ts("2026-03-01T12:00:00.000Z"),
		ConsecutiveFailures: new(int),
	}
}

// fullWebhookCreated is the answer of the creation, with the secret and
// without the failure count.
func fullWebhookCreated() spec.Webhook {
	w := fullWebhook()
	w.Secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	w.ConsecutiveFailures = nil
	return w
}

func fullWebhookDelivery() spec.WebhookDelivery {
	return spec.WebhookDelivery{Type: spec.EventTaskCompleted, Timestamp: ts("2026-03-09T10:02:14.002Z"), Data: fullReviewTask()}
}

func fullReviewError() spec.ReviewError {
	return spec.ReviewError{Error: spec.ReviewErrorDetail{Code: spec.CodePolicyError, Message: "the semantic matcher is unavailable; the task stays pending", Field: "request.messages", TaskID: taskID}}
}

func fullProblem() spec.Problem {
	return spec.Problem{
		Type:     "https://schemas.aiusage.dev/problems/invalid-parameter",
		Title:    "Invalid query parameter",
		Status:   400,
		Detail:   "limit must be between 1 and 1000",
		Instance: "/conversations?limit=0",
		Errors:   []spec.ProblemField{{Field: "limit", Message: "must be between 1 and 1000"}},
		// An extension member (RFC 9457, section 3.2).
		Extensions: map[string]any{"maximum": 1000},
	}
}

func cursor(s string) *string { return &s }

// conversationPage builds a page of n realistic conversations.
func conversationPage(n int) spec.List[spec.Conversation] {
	page := spec.List[spec.Conversation]{HasMore: true, NextCursor: cursor("eyJ1IjoiMjAyNi0wMy0wOVQxMDowMDowMC4wMDBaIiwiaSI6ImNvbnZfMDAwMDk5In0")}
	for i := range n {
		c := fullConversation(i)
		c.DeletedAt = spec.Time{} // live conversations
		page.Data = append(page.Data, c)
	}
	return page
}

func fullExportManifest() spec.ExportManifest {
	return spec.ExportManifest{
		Format: spec.ExportFormat, ID: "000000000042-20260309T101500123Z", Sequence: 42, Kind: spec.ExportIncrement,
		Previous: "000000000041-20260309T091500045Z", CreatedAt: ts("2026-03-09T10:15:00.123Z"),
		From: ts("2026-03-09T09:10:00.045Z"), To: ts("2026-03-09T10:15:00.123Z"), Tenant: "acme",
		Files: []spec.ExportFile{{
			Resource: "usage", Path: "usage.ndjson.gz", Records: 407, Bytes: 9120,
			SHA256: "a4e624d686e03ed2767c0abd85c14426b0b1157d2ce81d27bb4fe4f6f01d688a",
			Usage: &spec.ExportUsageWindow{StartAt: ts("2026-03-07T09:00:00.000Z"), EndAt: ts("2026-03-09T11:00:00.000Z"),
				Granularity: spec.GranularityHour, GroupBy: spec.Dimensions},
		}},
	}
}

func fullExportIndex() spec.ExportIndex {
	return spec.ExportIndex{Format: spec.ExportFormat, UpdatedAt: ts("2026-03-09T10:15:01.002Z"), Sets: []spec.ExportIndexSet{
		{ID: "000000000042-20260309T101500123Z", Sequence: 42, Kind: spec.ExportIncrement, Manifest: "000000000042-20260309T101500123Z/manifest.json"},
	}}
}

func fullPushDelivery() spec.PushDelivery {
	conv, err := json.Marshal(fullConversation(0))
	if err != nil {
		panic(err)
	}
	return spec.PushDelivery{Type: spec.PushTypeRecords, Resource: "conversations", Records: []json.RawMessage{conv},
		AsOf: ts("2026-03-09T10:15:00.123Z")}
}
