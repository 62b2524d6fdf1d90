package spec_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
)

// Valid base documents; most invalid cases change exactly one place of one of
// them, so the expected finding is the only one.
var validBases = map[string]string{
	"conversation": `{"id":"conv_1","startedAt":"2026-03-09T08:15:00Z","updatedAt":"2026-03-09T08:16:35.250Z",
		"user":{"id":"u_1","email":"ada@example.com","groups":["research"]},
		"parameters":{"temperature":0.2,"maxTokens":1024},
		"messages":[{"id":"m1","role":"user","content":"Hello","createdAt":"2026-03-09T08:15:00Z"},{"id":"m2","role":"assistant","content":"Hi!","createdAt":"2026-03-09T08:15:02.120Z"}],
		"attachments":[{"id":"a1","kind":"uploaded","filename":"q3.xlsx"}],
		"usage":{"inputTokens":12,"outputTokens":4,"totalTokens":16,"cost":0.0001},
		"metadata":{"workspace":"legal"}}`,
	"event": `{"id":"evt_1","occurredAt":"2026-03-09T09:12:44.120Z","type":"user.login","actor":{"type":"user","id":"u_1"},"category":"Authentication","action":"SignedIn","payload":{"ip":"203.0.113.7"}}`,
	"usage-bucket": `{"startAt":"2026-03-09T00:00:00Z","endAt":"2026-03-10T00:00:00Z","granularity":"day","dimensions":{"model":"gpt-4.1"},
		"metrics":{"requests":10,"conversations":3,"activeUsers":2,"inputTokens":1000,"outputTokens":200,"cost":0.5}}`,
	"assistant": `{"id":"asst_1","name":"Helper","createdAt":"2025-11-02T10:00:00Z","visibility":"team",
		"skills":[{"id":"s1","name":"Search","type":"builtin"}],"knowledge":[{"id":"k1","name":"FAQ","sizeBytes":1024}],
		"usage":{"conversationCount":3,"userCount":2,"lastUsedAt":"2026-03-01T00:00:00Z"}}`,
	"conversation-list": `{"data":[{"id":"c1","startedAt":"2026-03-09T08:15:00Z"},{"id":"c2","startedAt":"2026-03-09T08:16:00Z"}],"hasMore":true,"nextCursor":"YzI"}`,
	"event-list":        `{"data":[{"id":"e1","occurredAt":"2026-03-09T08:15:00Z"}],"hasMore":false,"nextCursor":null}`,
	"usage-list":        `{"data":[{"startAt":"2026-03-09T00:00:00Z","metrics":{"requests":1,"cost":0.1}}],"hasMore":false}`,
	"instruction-create": `{"agentType":"DataProtection","title":"Block IBANs","trigger":{"type":"Regex","pattern":"\\bDE[0-9]{20}\\b","isCaseSensitive":false},
		"action":"Block","criticality":"High","categoryId":null,"usedBy":["` + agentID + `","` + agentID2 + `"],"allowRedaction":true}`,
	"instruction-create-stringmatch": `{"agentType":"DataProtection","title":"Falcon","trigger":{"type":"StringMatch","values":["Project Falcon","Falcon merger"]},"action":"Block","criticality":"Low"}`,
	"instruction-create-semantic":    `{"agentType":"DataProtection","title":"Results","trigger":{"type":"Semantic","text":"unannounced quarterly results"},"action":"Block","criticality":"High"}`,
	"instruction": `{"id":"` + instrID + `","agentType":"DataProtection","title":"Block IBANs","trigger":{"type":"Regex","pattern":"DE[0-9]{20}"},
		"action":"Block","criticality":"High","categoryId":"` + categoryID + `","usedBy":[],"allowRedaction":false,"assessmentId":null,
		"createdAt":"2026-02-14T09:30:00.000Z","updatedAt":"2026-03-01T11:05:27.314Z"}`,
	"instruction-patch": `{"title":"Renamed","categoryId":null}`,
	"instruction-list":  `{"items":[],"totalCount":0,"page":1,"pageSize":20}`,
	"organisation-list": `[{"id":"` + orgID + `","name":"Northwind Traders"}]`,
	"agent-list":        `[{"id":"` + agentID + `","name":"EU agent","type":"DataProtection","instructionCount":100}]`,
	"review-task": `{"id":"` + taskID + `","agentId":"` + agentID + `","status":"change_requested","request":{"messages":[{"role":"user","content":"Send it to DE89370400440532013000"}]},
		"reasons":[{"instructionId":"` + instrID + `","title":"Block IBANs","action":"Block","criticality":"Low","matches":[{"messageIndex":0,"start":11,"end":33}]}],
		"decision":{"by":"policy","decidedAt":"2026-03-09T09:58:00.412Z"},"createdAt":"2026-03-09T09:58:00.000Z","completedAt":"2026-03-09T09:58:00.412Z"}`,
	"review-task-create": `{"agentId":"` + agentID + `","request":{"model":"gpt-4.1","messages":[{"role":"user","content":"Draft a reply"}]},"externalId":"req-1"}`,
	"review-task-list":   `{"data":[],"total":0,"limit":20,"offset":0}`,
	"webhook-create":     `{"url":"https://hooks.example.com/review","events":["task.completed"],"description":"support"}`,
	"webhook-created":    `{"id":"` + webhookID + `","url":"https://hooks.example.com/review","events":["task.completed"],"createdAt":"2026-03-01T12:00:00.000Z","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`,
	"webhook-delivery":   `{"type":"task.created","timestamp":"2026-03-09T09:58:00.010Z","data":{"id":"` + taskID + `","status":"pending","createdAt":"2026-03-09T09:58:00.000Z"}}`,
	"problem":            `{"type":"about:blank","title":"Bad Request","status":400,"detail":"limit must be between 1 and 1000","errors":[{"field":"limit","message":"out of range"}]}`,
	"review-error":       `{"error":{"code":"INVALID_REQUEST","message":"agentId is not a UUID","field":"agentId"}}`,
}

// schemaOfBase is the schema a base document is valid against.
func schemaOfBase(base string) string {
	if strings.HasPrefix(base, "instruction-create-") {
		return "instruction-create"
	}
	return base
}

func decodeJSON(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v), s)
	return v
}

// edit returns base with the value at JSON pointer ptr replaced by raw
// (raw == "" deletes it). The parent must exist.
func edit(t testing.TB, base, ptr, raw string) string {
	t.Helper()
	src, ok := validBases[base]
	require.True(t, ok, "unknown base %q", base)
	return editDoc(t, src, ptr, raw)
}

// editDoc is edit of a document rather than a base.
func editDoc(t testing.TB, src, ptr, raw string) string {
	t.Helper()
	doc := decodeJSON(t, src)
	base := src
	toks := strings.Split(ptr, "/")[1:]
	parent := doc
	for _, tok := range toks[:len(toks)-1] {
		switch p := parent.(type) {
		case map[string]any:
			parent = p[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			require.NoError(t, err)
			parent = p[i]
		}
		require.NotNil(t, parent, "%s: no parent for %s", base, ptr)
	}
	last := toks[len(toks)-1]
	switch p := parent.(type) {
	case map[string]any:
		if raw == "" {
			_, ok := p[last]
			require.True(t, ok, "%s: nothing to delete at %s", base, ptr)
			delete(p, last)
		} else {
			p[last] = decodeJSON(t, raw)
		}
	case []any:
		i, err := strconv.Atoi(last)
		require.NoError(t, err)
		require.Less(t, i, len(p))
		require.NotEmpty(t, raw, "cannot delete array items")
		p[i] = decodeJSON(t, raw)
	default:
		t.Fatalf("%s: parent of %s is not a container", base, ptr)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(doc))
	return buf.String()
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

type invalidCase struct {
	name    string
	schema  string
	base    string // edit validBases[base]: set ptr (or at) to raw, or delete it when raw is ""
	at      string // where to edit when not ptr
	raw     string
	doc     string // a whole document instead of an edit
	ptr     string // the pointer of the expected finding
	keyword string // the expected keyword; "" when not stable
	// others allows findings at other pointers too (the default: every error
	// finding of an edited document is at ptr or below it).
	others bool
}

func invalidCases(t testing.TB) []invalidCase {
	s201 := strings.Repeat("x", 201)
	return []invalidCase{
		// Wrong types and ranges, at several depths.
		{name: "id as number", base: "conversation", raw: `42`, ptr: "/id", keyword: "type"},
		{name: "empty id", base: "conversation", raw: `""`, ptr: "/id", keyword: "minLength"},
		{name: "missing id", base: "conversation", raw: "", ptr: "/id", keyword: "required"},
		{name: "messages not an array", base: "conversation", raw: `{"id":"m1"}`, ptr: "/messages", keyword: "type"},
		{name: "message content number", base: "conversation", raw: `7`, ptr: "/messages/1/content", keyword: "type"},
		{name: "message not an object", base: "conversation", at: "/messages/0", raw: `"hello"`, ptr: "/messages/0", keyword: "type"},
		{name: "inputTokens as string", base: "conversation", raw: `"12"`, ptr: "/usage/inputTokens", keyword: "type"},
		{name: "negative outputTokens", base: "conversation", raw: `-4`, ptr: "/usage/outputTokens", keyword: "minimum"},
		{name: "fractional totalTokens", base: "conversation", raw: `16.5`, ptr: "/usage/totalTokens", keyword: "type"},
		{name: "negative cost", base: "conversation", raw: `-0.01`, ptr: "/usage/cost", keyword: "minimum"},
		{name: "group not a string", base: "conversation", raw: `7`, ptr: "/user/groups/0", keyword: "type"},
		{name: "maxTokens negative", base: "conversation", raw: `-1`, ptr: "/parameters/maxTokens", keyword: "minimum"},
		{name: "metadata not an object", base: "conversation", raw: `"legal"`, ptr: "/metadata", keyword: "type"},
		{name: "attachments not an array", base: "conversation", raw: `{"id":"a1"}`, ptr: "/attachments", keyword: "type"},
		{name: "event payload a string", base: "event", raw: `"{\"ip\":1}"`, ptr: "/payload", keyword: "type"},
		{name: "actor type number", base: "event", raw: `1`, ptr: "/actor/type", keyword: "type"},
		{name: "usage requests fractional", base: "usage-bucket", raw: `1.5`, ptr: "/metrics/requests", keyword: "type"},
		{name: "usage dimension not a string", base: "usage-bucket", raw: `null`, ptr: "/dimensions/model", keyword: "type"},
		{name: "assistant userCount negative", base: "assistant", raw: `-2`, ptr: "/usage/userCount", keyword: "minimum"},
		{name: "knowledge sizeBytes a string", base: "assistant", raw: `"1 KB"`, ptr: "/knowledge/0/sizeBytes", keyword: "type"},

		// Missing timestamps.
		{name: "missing startedAt", base: "conversation", raw: "", ptr: "/startedAt", keyword: "required"},
		{name: "missing occurredAt", base: "event", raw: "", ptr: "/occurredAt", keyword: "required"},
		{name: "missing createdAt", base: "assistant", raw: "", ptr: "/createdAt", keyword: "required"},
		{name: "missing startAt", base: "usage-bucket", raw: "", ptr: "/startAt", keyword: "required"},
		{name: "missing review task createdAt", base: "review-task", raw: "", ptr: "/createdAt", keyword: "required"},

		// Timestamps that are not RFC 3339 UTC with uppercase T and Z.
		{name: "offset +02:00", base: "conversation", at: "/startedAt", raw: `"2026-03-09T10:15:00+02:00"`, ptr: "/startedAt", keyword: "format"},
		{name: "offset -00:00", base: "conversation", at: "/startedAt", raw: `"2026-03-09T08:15:00-00:00"`, ptr: "/startedAt", keyword: "format"},
		{name: "offset +00:00", base: "event", at: "/occurredAt", raw: `"2026-03-09T08:15:00+00:00"`, ptr: "/occurredAt", keyword: "format"},
		{name: "lowercase z", base: "conversation", at: "/updatedAt", raw: `"2026-03-09T08:16:35.250z"`, ptr: "/updatedAt", keyword: "format"},
		{name: "lowercase t", base: "event", at: "/occurredAt", raw: `"2026-03-09t09:12:44.120Z"`, ptr: "/occurredAt", keyword: "format"},
		{name: "space separator", base: "usage-bucket", at: "/startAt", raw: `"2026-03-09 00:00:00Z"`, ptr: "/startAt", keyword: "format"},
		{name: "missing offset", base: "usage-bucket", at: "/endAt", raw: `"2026-03-10T00:00:00"`, ptr: "/endAt", keyword: "format"},
		{name: "month 13", base: "assistant", at: "/createdAt", raw: `"2025-13-02T10:00:00Z"`, ptr: "/createdAt", keyword: "format"},
		{name: "date only", base: "assistant", at: "/createdAt", raw: `"2025-11-02"`, ptr: "/createdAt", keyword: "format"},
		{name: "february 30", base: "conversation", at: "/startedAt", raw: `"2026-02-30T08:15:00Z"`, ptr: "/startedAt", keyword: "format"},
		{name: "hour 24", base: "conversation", at: "/startedAt", raw: `"2026-03-09T24:00:00Z"`, ptr: "/startedAt", keyword: "format"},
		{name: "timestamp a number", base: "conversation", at: "/startedAt", raw: `1773044100`, ptr: "/startedAt", keyword: "format"},
		{name: "nested message createdAt offset", base: "conversation", at: "/messages/1/createdAt", raw: `"2026-03-09T09:15:02+01:00"`, ptr: "/messages/1/createdAt", keyword: "format"},
		{name: "rollup lastUsedAt lowercase z", base: "assistant", at: "/usage/lastUsedAt", raw: `"2026-03-01T00:00:00z"`, ptr: "/usage/lastUsedAt", keyword: "format"},
		{name: "list item timestamp offset", base: "event-list", at: "/data/0/occurredAt", raw: `"2026-03-09T09:15:00+01:00"`, ptr: "/data/0/occurredAt", keyword: "format"},

		// The organisation and review-task APIs want exactly three fractional digits.
		{name: "org createdAt without fraction", base: "instruction", at: "/createdAt", raw: `"2026-02-14T09:30:00Z"`, ptr: "/createdAt", keyword: "format"},
		{name: "org updatedAt with 6 digits", base: "instruction", at: "/updatedAt", raw: `"2026-03-01T11:05:27.314000Z"`, ptr: "/updatedAt", keyword: "format"},
		{name: "org createdAt with 2 digits", base: "instruction", at: "/createdAt", raw: `"2026-02-14T09:30:00.10Z"`, ptr: "/createdAt", keyword: "format"},
		{name: "review createdAt without fraction", base: "review-task", at: "/createdAt", raw: `"2026-03-09T09:58:00Z"`, ptr: "/createdAt", keyword: "format"},
		{name: "review decidedAt with offset", base: "review-task", at: "/decision/decidedAt", raw: `"2026-03-09T10:58:00.412+01:00"`, ptr: "/decision/decidedAt", keyword: "format"},
		{name: "webhook timestamp without fraction", base: "webhook-delivery", at: "/timestamp", raw: `"2026-03-09T09:58:00Z"`, ptr: "/timestamp", keyword: "format"},
		{name: "webhook createdAt 1 digit", base: "webhook-created", at: "/createdAt", raw: `"2026-03-01T12:00:00.0Z"`, ptr: "/createdAt", keyword: "format"},

		// Closed enums.
		{name: "action Deny", base: "instruction-create", at: "/action", raw: `"Deny"`, ptr: "/action", keyword: "enum"},
		{name: "criticality Medium", base: "instruction-create", at: "/criticality", raw: `"Medium"`, ptr: "/criticality", keyword: "enum"},
		{name: "criticality lowercase", base: "instruction", at: "/criticality", raw: `"high"`, ptr: "/criticality", keyword: "enum"},
		{name: "agentType Other", base: "instruction-create", at: "/agentType", raw: `"Other"`, ptr: "/agentType", keyword: "enum"},
		{name: "agent type Other", base: "agent-list", at: "/0/type", raw: `"Other"`, ptr: "/0/type", keyword: "enum"},
		{name: "trigger type Fuzzy", base: "instruction-create", at: "/trigger/type", raw: `"Fuzzy"`, ptr: "/trigger/type", keyword: "enum"},
		{name: "review status done", base: "review-task", at: "/status", raw: `"done"`, ptr: "/status", keyword: "enum"},
		{name: "decision by robot", base: "review-task", at: "/decision/by", raw: `"robot"`, ptr: "/decision/by", keyword: "enum"},
		{name: "reason action Deny", base: "review-task", at: "/reasons/0/action", raw: `"Deny"`, ptr: "/reasons/0/action", keyword: "enum"},
		{name: "webhook event type", base: "webhook-create", at: "/events/0", raw: `"task.deleted"`, ptr: "/events/0", keyword: "enum"},
		{name: "delivery type", base: "webhook-delivery", at: "/type", raw: `"task.updated"`, ptr: "/type", keyword: "enum"},
		{name: "error code", base: "review-error", at: "/error/code", raw: `"NOT_ALLOWED"`, ptr: "/error/code", keyword: "enum"},

		// Trigger shapes.
		{name: "Regex without pattern", base: "instruction-create", at: "/trigger/pattern", raw: "", ptr: "/trigger/pattern", keyword: "required"},
		{name: "StringMatch without values", base: "instruction-create-stringmatch", at: "/trigger/values", raw: "", ptr: "/trigger/values", keyword: "required"},
		{name: "Semantic without text", base: "instruction-create-semantic", at: "/trigger/text", raw: "", ptr: "/trigger/text", keyword: "required"},
		{name: "trigger without type", base: "instruction-create", at: "/trigger/type", raw: "", ptr: "/trigger/type", keyword: "required"},
		{name: "StringMatch empty values", base: "instruction-create-stringmatch", at: "/trigger/values", raw: `[]`, ptr: "/trigger/values", keyword: "minItems"},
		{name: "StringMatch empty value", base: "instruction-create-stringmatch", at: "/trigger/values/0", raw: `""`, ptr: "/trigger/values/0", keyword: "minLength"},
		{name: "StringMatch value of 201 chars", base: "instruction-create-stringmatch", at: "/trigger/values/1", raw: jsonString(s201), ptr: "/trigger/values/1", keyword: "maxLength"},
		{name: "StringMatch 1001 values", base: "instruction-create-stringmatch", at: "/trigger/values", raw: manyValues(1001), ptr: "/trigger/values", keyword: "maxItems"},
		{name: "Regex with text", base: "instruction-create", at: "/trigger/text", raw: `"iban"`, ptr: "/trigger/text", keyword: "additionalProperties"},
		{name: "Regex with values", base: "instruction-create", at: "/trigger/values", raw: `["DE"]`, ptr: "/trigger/values", keyword: "additionalProperties"},
		{name: "Semantic with pattern", base: "instruction-create-semantic", at: "/trigger/pattern", raw: `"results?"`, ptr: "/trigger/pattern", keyword: "additionalProperties"},
		{name: "Semantic with isCaseSensitive", base: "instruction-create-semantic", at: "/trigger/isCaseSensitive", raw: `true`, ptr: "/trigger/isCaseSensitive", keyword: "additionalProperties"},
		{name: "Semantic sensitivity low", base: "instruction-create-semantic", at: "/trigger/sensitivity", raw: `"low"`, ptr: "/trigger/sensitivity", keyword: "enum"},
		{name: "Semantic sensitivity empty", base: "instruction-create-semantic", at: "/trigger/sensitivity", raw: `""`, ptr: "/trigger/sensitivity", keyword: "enum"},
		{name: "Regex with sensitivity", base: "instruction-create", at: "/trigger/sensitivity", raw: `"high"`, ptr: "/trigger/sensitivity", keyword: "additionalProperties"},
		{name: "StringMatch with sensitivity", base: "instruction-create-stringmatch", at: "/trigger/sensitivity", raw: `"standard"`, ptr: "/trigger/sensitivity", keyword: "additionalProperties"},
		{name: "Semantic text of 2001 chars", base: "instruction-create-semantic", at: "/trigger/text", raw: jsonString(strings.Repeat("a", 2001)), ptr: "/trigger/text", keyword: "maxLength"},
		{name: "pattern of 1001 chars", base: "instruction-create", at: "/trigger/pattern", raw: jsonString(strings.Repeat("a", 1001)), ptr: "/trigger/pattern", keyword: "maxLength"},
		{name: "empty pattern", base: "instruction-create", at: "/trigger/pattern", raw: `""`, ptr: "/trigger/pattern", keyword: "minLength"},
		{name: "isCaseSensitive as string", base: "instruction-create", at: "/trigger/isCaseSensitive", raw: `"false"`, ptr: "/trigger/isCaseSensitive", keyword: "type"},
		{name: "trigger not an object", base: "instruction-create", at: "/trigger", raw: `"Regex"`, ptr: "/trigger", keyword: "type"},
		{name: "trigger on its own", schema: "trigger", doc: `{"type":"StringMatch","values":"Falcon"}`, ptr: "/values", keyword: "type"},
		{name: "patch trigger shape", base: "instruction-patch", at: "/trigger", raw: `{"type":"Regex","text":"x"}`, ptr: "/trigger/pattern", keyword: "required", others: true},

		// Instruction fields.
		{name: "title of 201 chars", base: "instruction-create", at: "/title", raw: jsonString(strings.Repeat("é", 201)), ptr: "/title", keyword: "maxLength"},
		{name: "empty title", base: "instruction-create", at: "/title", raw: `""`, ptr: "/title", keyword: "minLength"},
		{name: "missing title", base: "instruction-create", at: "/title", raw: "", ptr: "/title", keyword: "required"},
		{name: "patch empty title", base: "instruction-patch", at: "/title", raw: `""`, ptr: "/title", keyword: "minLength"},
		{name: "unknown field on create", base: "instruction-create", at: "/foo", raw: `"bar"`, ptr: "/foo", keyword: "additionalProperties"},
		{name: "unknown field on patch", base: "instruction-patch", at: "/organisationId", raw: jsonString(orgID), ptr: "/organisationId", keyword: "additionalProperties"},
		{name: "patch id not a uuid", base: "instruction-patch", at: "/id", raw: `"instr-1"`, ptr: "/id", keyword: "format"},
		{name: "patch updatedAt with an offset", base: "instruction-patch", at: "/updatedAt", raw: `"2026-03-09T10:02:13.771+01:00"`, ptr: "/updatedAt", keyword: "format"},
		{name: "allowRedaction with Semantic", base: "instruction-create-semantic", at: "/allowRedaction", raw: `true`, ptr: "/allowRedaction", keyword: "const"},
		{name: "allowRedaction with Semantic on patch", schema: "instruction-patch", doc: `{"trigger":{"type":"Semantic","text":"salaries"},"allowRedaction":true}`, ptr: "/allowRedaction", keyword: "const"},
		{name: "allowRedaction with Semantic on instruction", schema: "instruction", ptr: "/allowRedaction", keyword: "const",
			doc: editDoc(t, edit(t, "instruction", "/trigger", `{"type":"Semantic","text":"salaries"}`), "/allowRedaction", "true")},
		{name: "Regex trigger made Semantic keeps allowRedaction", base: "instruction-create", at: "/trigger", raw: `{"type":"Semantic","text":"salaries"}`, ptr: "/allowRedaction", keyword: "const"},
		{name: "allowRedaction not a boolean", base: "instruction-create", at: "/allowRedaction", raw: `"yes"`, ptr: "/allowRedaction", keyword: "type"},
		{name: "categoryId not a uuid", base: "instruction-create", at: "/categoryId", raw: `"pii"`, ptr: "/categoryId", keyword: "anyOf"},
		{name: "categoryId a number", base: "instruction", at: "/categoryId", raw: `12`, ptr: "/categoryId", keyword: "anyOf"},
		{name: "usedBy item not a uuid", base: "instruction-create", at: "/usedBy/1", raw: `"agent-7"`, ptr: "/usedBy/1", keyword: "format"},
		{name: "usedBy not an array", base: "instruction-create", at: "/usedBy", raw: jsonString(agentID), ptr: "/usedBy", keyword: "type"},
		{name: "assessmentId empty", base: "instruction-create", at: "/assessmentId", raw: `""`, ptr: "/assessmentId", keyword: "minLength"},
		{name: "instruction missing categoryId", base: "instruction", at: "/categoryId", raw: "", ptr: "/categoryId", keyword: "required"},
		{name: "instruction usedBy null", base: "instruction", at: "/usedBy", raw: `null`, ptr: "/usedBy", keyword: "type"},
		{name: "instruction id not a uuid", base: "instruction", at: "/id", raw: `"instr_1"`, ptr: "/id", keyword: "format"},
		{name: "instruction-list pageSize 101", base: "instruction-list", at: "/pageSize", raw: `101`, ptr: "/pageSize", keyword: "maximum"},
		{name: "instruction-list item invalid", base: "instruction-list", at: "/items", raw: `[{"id":"` + instrID + `"}]`, ptr: "/items/0/title", keyword: "required", others: true},

		// List envelopes.
		// Without hasMore the if fails and the else also rejects the cursor.
		{name: "envelope missing hasMore", base: "conversation-list", at: "/hasMore", raw: "", ptr: "/hasMore", keyword: "required", others: true},
		{name: "envelope missing data", base: "event-list", at: "/data", raw: "", ptr: "/data", keyword: "required"},
		{name: "hasMore true with null cursor", base: "conversation-list", at: "/nextCursor", raw: `null`, ptr: "/nextCursor", keyword: "type"},
		{name: "hasMore true without cursor", base: "conversation-list", at: "/nextCursor", raw: "", ptr: "/nextCursor", keyword: "required"},
		{name: "hasMore true with empty cursor", base: "conversation-list", at: "/nextCursor", raw: `""`, ptr: "/nextCursor", keyword: "minLength"},
		{name: "hasMore false with a string cursor", base: "event-list", at: "/nextCursor", raw: `"ZTI"`, ptr: "/nextCursor", keyword: "type"},
		{name: "hasMore a string", base: "event-list", at: "/hasMore", raw: `"false"`, ptr: "/hasMore", keyword: "type"},
		{name: "data not an array", base: "conversation-list", at: "/data", raw: `{"id":"c1"}`, ptr: "/data", keyword: "type"},
		{name: "an item of data invalid", base: "conversation-list", at: "/data/1/startedAt", raw: "", ptr: "/data/1/startedAt", keyword: "required"},
		{name: "an item of usage data invalid", base: "usage-list", at: "/data/0/metrics/cost", raw: `-1`, ptr: "/data/0/metrics/cost", keyword: "minimum"},

		// Organisations and agents.
		{name: "organisation-list with two entries", schema: "organisation-list", doc: `[{"id":"` + orgID + `","name":"A"},{"id":"` + agentID + `","name":"B"}]`, ptr: "", keyword: "maxItems"},
		{name: "organisation-list empty", schema: "organisation-list", doc: `[]`, ptr: "", keyword: "minItems"},
		{name: "organisation id not a uuid", base: "organisation-list", at: "/0/id", raw: `"org_1"`, ptr: "/0/id", keyword: "format"},
		{name: "organisation without name", base: "organisation-list", at: "/0/name", raw: "", ptr: "/0/name", keyword: "required"},
		{name: "agent with 101 instructions", base: "agent-list", at: "/0/instructionCount", raw: `101`, ptr: "/0/instructionCount", keyword: "maximum"},

		// Review tasks.
		{name: "review-task-create without messages", base: "review-task-create", at: "/request/messages", raw: "", ptr: "/request/messages", keyword: "required"},
		{name: "review-task-create empty messages", base: "review-task-create", at: "/request/messages", raw: `[]`, ptr: "/request/messages", keyword: "minItems"},
		{name: "review-task-create unknown field", base: "review-task-create", at: "/priority", raw: `"high"`, ptr: "/priority", keyword: "additionalProperties"},
		{name: "review-task-create without request", base: "review-task-create", at: "/request", raw: "", ptr: "/request", keyword: "required"},
		{name: "review-task-create agentId not a uuid", base: "review-task-create", at: "/agentId", raw: `"agent-1"`, ptr: "/agentId", keyword: "format"},
		{name: "review message without role", base: "review-task-create", at: "/request/messages/0", raw: `{"content":"hi"}`, ptr: "/request/messages/0/role", keyword: "required"},
		{name: "review externalId too long", base: "review-task-create", at: "/externalId", raw: jsonString(s201), ptr: "/externalId", keyword: "maxLength"},
		{name: "review match start negative", base: "review-task", at: "/reasons/0/matches/0/start", raw: `-1`, ptr: "/reasons/0/matches/0/start", keyword: "minimum"},
		{name: "review decision without decidedAt", base: "review-task", at: "/decision/decidedAt", raw: "", ptr: "/decision/decidedAt", keyword: "required"},
		{name: "review-task-list limit 101", base: "review-task-list", at: "/limit", raw: `101`, ptr: "/limit", keyword: "maximum"},
		{name: "delivery task invalid", base: "webhook-delivery", at: "/data/status", raw: `"done"`, ptr: "/data/status", keyword: "enum"},

		// Webhooks.
		{name: "webhook-create without url", base: "webhook-create", at: "/url", raw: "", ptr: "/url", keyword: "required"},
		{name: "webhook-create relative url", base: "webhook-create", at: "/url", raw: `"/hooks/review"`, ptr: "/url", keyword: "format"},
		{name: "webhook-create duplicate events", base: "webhook-create", at: "/events", raw: `["task.created","task.created"]`, ptr: "/events", keyword: "uniqueItems"},
		{name: "webhook-create empty events", base: "webhook-create", at: "/events", raw: `[]`, ptr: "/events", keyword: "minItems"},
		{name: "webhook-create unknown field", base: "webhook-create", at: "/secret", raw: `"whsec_abc"`, ptr: "/secret", keyword: "additionalProperties"},
		{name: "webhook-created without secret", base: "webhook-created", at: "/secret", raw: "", ptr: "/secret", keyword: "required"},
		{name: "webhook-created bad secret", base: "webhook-created", at: "/secret", raw: `"sk_live_123"`, ptr: "/secret", keyword: "pattern"},

		// Error bodies.
		{name: "problem without status", base: "problem", at: "/status", raw: "", ptr: "/status", keyword: "required"},
		{name: "problem status 200", base: "problem", at: "/status", raw: `200`, ptr: "/status", keyword: "minimum"},
		{name: "problem status 600", base: "problem", at: "/status", raw: `600`, ptr: "/status", keyword: "maximum"},
		{name: "problem status a string", base: "problem", at: "/status", raw: `"400"`, ptr: "/status", keyword: "type"},
		{name: "problem error without message", base: "problem", at: "/errors/0", raw: `{"field":"limit"}`, ptr: "/errors/0/message", keyword: "required"},
		{name: "review-error without code", base: "review-error", at: "/error/code", raw: "", ptr: "/error/code", keyword: "required"},
		{name: "review-error not nested", schema: "review-error", doc: `{"code":"INVALID_REQUEST","message":"x"}`, ptr: "/error", keyword: "required"},
	}
}

func manyValues(n int) string {
	vs := make([]string, n)
	for i := range vs {
		vs[i] = fmt.Sprintf("term %d", i)
	}
	b, _ := json.Marshal(vs)
	return string(b)
}

func TestValidBasesAreValid(t *testing.T) {
	t.Parallel()
	for base, doc := range validBases {
		findings, err := spec.Validate(schemaOfBase(base), []byte(doc))
		require.NoError(t, err, base)
		require.Empty(t, findings, base)
	}
}

func TestInvalidDocuments(t *testing.T) {
	t.Parallel()
	cases := invalidCases(t)
	require.GreaterOrEqual(t, len(cases), 45)
	names := map[string]bool{}
	for _, tc := range cases {
		require.False(t, names[tc.name], "duplicate case %q", tc.name)
		names[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			schema, doc := tc.schema, tc.doc
			if doc == "" {
				require.NotEmpty(t, tc.base)
				at := tc.at
				if at == "" {
					at = tc.ptr
				}
				doc = edit(t, tc.base, at, tc.raw)
			}
			if schema == "" {
				schema = schemaOfBase(tc.base)
			}
			findings, err := spec.Validate(schema, []byte(doc))
			require.NoError(t, err)
			require.NotEmpty(t, findings, "no finding for %s", doc)
			require.False(t, spec.Valid(findings), "%s: %v", doc, findings)
			var hit *spec.Finding
			for i, f := range findings {
				if f.Pointer == tc.ptr && f.Level == spec.LevelError {
					hit = &findings[i]
				}
				if !tc.others {
					require.True(t, f.Pointer == tc.ptr || strings.HasPrefix(f.Pointer, tc.ptr+"/"),
						"unexpected finding %v (want only %s) for %s", f, tc.ptr, doc)
				}
			}
			require.NotNil(t, hit, "no error finding at %q; findings: %v; document: %.300s", tc.ptr, findings, doc)
			if tc.keyword != "" {
				require.Equal(t, tc.keyword, hit.Keyword, "keyword of %v", *hit)
			}
			require.NotEmpty(t, hit.Message)

			// The Lenient mode never hides an error.
			lenient, err := spec.Validate(schema, []byte(doc), spec.WithMode(spec.Lenient))
			require.NoError(t, err)
			require.False(t, spec.Valid(lenient))
		})
	}
}
