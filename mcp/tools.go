package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// argKind says how a tool argument becomes a REST query parameter.
type argKind int

const (
	argString argKind = iota // a string, sent as is
	argInt                   // an integer, sent in decimal
	argList                  // an array of strings, sent comma-separated
	argPath                  // the record id, sent as the last path segment
	argLocal                 // read by the tool itself (fields), not sent
)

// toolDef describes one tool over one REST endpoint.
type toolDef struct {
	name, title, description string
	path                     string // the REST path; argPath adds "/{id}"
	args                     map[string]argKind
	properties               map[string]any // of the input schema
	required                 []string
	output                   string // spec/ schema of the structured content
	noun                     string // "conversations", for the text summary
}

// Summary fields: what fields="summary" drops from each conversation.
var summaryDropped = []string{"messages", "systemPrompt", "tools", "attachments"}

const timeFormatHint = "RFC 3339, for example 2026-01-02T03:04:05Z; any UTC offset is accepted and answers are always in UTC."

func cursorProperty() map[string]any {
	return map[string]any{
		"type":      "string",
		"minLength": 1,
		"description": "Opaque cursor of the next page: the nextCursor of the previous answer, sent exactly as received " +
			"together with the same other arguments (only limit may change). Leave it out for the first page. A " +
			"cursor from another tool, or sent with other filters, is refused.",
	}
}

func limitProperty() map[string]any {
	return map[string]any{
		"type":        "integer",
		"minimum":     1,
		"maximum":     provider.MaxLimit,
		"default":     provider.DefaultLimit,
		"description": fmt.Sprintf("Page size: at most this many records, from 1 to %d. Default %d.", provider.MaxLimit, provider.DefaultLimit),
	}
}

func timeProperty(desc string) map[string]any {
	return map[string]any{"type": "string", "format": "date-time", "description": desc + " " + timeFormatHint}
}

func idProperty(what string) map[string]any {
	return map[string]any{
		"type":        "string",
		"minLength":   1,
		"maxLength":   provider.MaxIDLength,
		"description": "The id of the " + what + ", as listed in the id member of a record.",
	}
}

// toolDefs lists the tools of the server: a list and a get for the
// conversations and the assistants, a list for the events, and the usage.
func toolDefs() []toolDef {
	return slices.Concat(conversationTools(), assistantTools(), eventTools(), usageTools())
}

// conversationTools returns the tools of the conversations: list_conversations and get_conversation.
func conversationTools() []toolDef {
	return []toolDef{
		{
			name:  "list_conversations",
			title: "List AI conversations",
			description: "Lists the organisation's conversations with AI assistants (one record per conversation or " +
				"single request): user, model, assistant, messages, tools, attachments, token usage and cost. " +
				"Ordered by updatedAt then id, ascending, so new and changed conversations come last; deleted " +
				"conversations stay listed as tombstones with deletedAt set and no content. Answers one page: when " +
				"hasMore is true, call again with the same arguments and cursor set to nextCursor. Use " +
				`fields="summary" to leave out message bodies, system prompts, tools and attachments, then ` +
				"get_conversation for the ones you need.",
			path: "/conversations",
			args: map[string]argKind{"updatedSince": argString, "startedAfter": argString, "cursor": argString, "limit": argInt, "fields": argLocal},
			properties: map[string]any{
				"updatedSince": timeProperty("Only conversations updated at or after this instant (inclusive)."),
				"startedAfter": timeProperty("Only conversations started strictly after this instant (exclusive)."),
				"cursor":       cursorProperty(),
				"limit":        limitProperty(),
				"fields": map[string]any{
					"type":    "string",
					"enum":    []string{"full", "summary"},
					"default": "full",
					"description": `"full" (default) returns each conversation whole. "summary" returns each without its ` +
						"messages, systemPrompt, tools and attachments members: who, when, which model and assistant, " +
						"status, token usage and cost, at a fraction of the size.",
				},
			},
			output: "conversation-list",
			noun:   "conversations",
		},
		{
			name:  "get_conversation",
			title: "Get one AI conversation",
			description: "Returns one conversation whole, with its messages, system prompt, tools, attachments, usage " +
				"and cost. A deleted conversation is returned as a tombstone with deletedAt set. An unknown id is an error.",
			path:       "/conversations",
			args:       map[string]argKind{"id": argPath},
			properties: map[string]any{"id": idProperty("conversation")},
			required:   []string{"id"},
			output:     "conversation",
			noun:       "conversation",
		},
	}
}

// assistantTools returns the tools of the assistants: list_assistants and get_assistant.
func assistantTools() []toolDef {
	return []toolDef{
		{
			name:  "list_assistants",
			title: "List custom AI assistants",
			description: "Lists the organisation's custom AI assistants (custom GPTs, agents, projects): name, " +
				"owner, model, instructions, skills, connectors, knowledge, visibility and a usage rollup. Ordered by " +
				"updatedAt then id, ascending. Answers one page: when hasMore is true, call again with the same " +
				"arguments and cursor set to nextCursor.",
			path: "/assistants",
			args: map[string]argKind{"updatedSince": argString, "cursor": argString, "limit": argInt},
			properties: map[string]any{
				"updatedSince": timeProperty("Only assistants updated at or after this instant (inclusive)."),
				"cursor":       cursorProperty(),
				"limit":        limitProperty(),
			},
			output: "assistant-list",
			noun:   "assistants",
		},
		{
			name:  "get_assistant",
			title: "Get one custom AI assistant",
			description: "Returns one custom AI assistant with its configuration and usage rollup. An unknown id is " +
				"an error.",
			path:       "/assistants",
			args:       map[string]argKind{"id": argPath},
			properties: map[string]any{"id": idProperty("assistant")},
			required:   []string{"id"},
			output:     "assistant",
			noun:       "assistant",
		},
	}
}

// eventTools returns the tool of the audit events: list_events.
func eventTools() []toolDef {
	return []toolDef{
		{
			name:  "list_events",
			title: "List audit events",
			description: "Lists the audit trail: sign-ins, access and configuration changes, data exports, assistants " +
				"created or deleted, integrations, policy actions. Each event has its native type, a normalised " +
				"category and action, the actor and the target. Ordered by occurredAt then id, ascending. Answers " +
				"one page: when hasMore is true, call again with the same arguments and cursor set to nextCursor.",
			path: "/events",
			args: map[string]argKind{"occurredAfter": argString, "category": argString, "cursor": argString, "limit": argInt},
			properties: map[string]any{
				"occurredAfter": timeProperty("Only events that occurred strictly after this instant (exclusive)."),
				"category": map[string]any{
					"type":        "string",
					"enum":        spec.EventCategories,
					"description": "Only events of this category. Default: all categories.",
				},
				"cursor": cursorProperty(),
				"limit":  limitProperty(),
			},
			output: "event-list",
			noun:   "events",
		},
	}
}

// usageTools returns the tool of usage and cost: get_usage.
func usageTools() []toolDef {
	return []toolDef{
		{
			name:  "get_usage",
			title: "Get AI usage and cost",
			description: "Returns aggregated AI usage over time: requests, conversations, active users, input and " +
				"output tokens and cost, per hour or day bucket, optionally grouped by model, assistant, user or " +
				"department. Buckets without usage are left out. The range is [startAt, endAt), rounded outwards to " +
				"the granularity's UTC boundaries, at most 31 days for hour and 366 for day; by default the 7 days " +
				"ending at the end of the current hour or day. Answers one page: when hasMore is true, call again " +
				"with the same arguments and cursor set to nextCursor.",
			path: "/usage",
			args: map[string]argKind{"startAt": argString, "endAt": argString, "granularity": argString, "groupBy": argList, "cursor": argString, "limit": argInt},
			properties: map[string]any{
				"startAt": timeProperty("Start of the range (inclusive), rounded down to the granularity. Default: 7 days before endAt."),
				"endAt":   timeProperty("End of the range (exclusive), rounded up to the granularity. Default: the end of the current hour or day."),
				"granularity": map[string]any{
					"type":        "string",
					"enum":        []string{spec.GranularityHour, spec.GranularityDay},
					"default":     spec.GranularityDay,
					"description": "Bucket size: hour or day (UTC). Default day.",
				},
				"groupBy": map[string]any{
					"type":        "array",
					"items":       map[string]any{"type": "string", "enum": spec.Dimensions},
					"uniqueItems": true,
					"description": "Dimensions to group each bucket by, any of model, assistantId, userId, department. Default: no grouping (one bucket per time step).",
				},
				"cursor": cursorProperty(),
				"limit":  limitProperty(),
			},
			output: "usage-list",
			noun:   "usage buckets",
		},
	}
}

// inputSchema returns the raw input schema of d. Unknown arguments are
// refused (additionalProperties false), by the schema and by the tool.
func (d toolDef) inputSchema() (json.RawMessage, error) {
	s := map[string]any{
		"type":                 "object",
		"properties":           d.properties,
		"additionalProperties": false,
	}
	if len(d.required) > 0 {
		s["required"] = d.required
	}
	return json.Marshal(s)
}

func (s *Server) addTools() error {
	for _, d := range toolDefs() {
		in, err := d.inputSchema()
		if err != nil {
			return fmt.Errorf("mcp: tool %s: %w", d.name, err)
		}
		out, ok := s.schemas[d.output]
		if !ok {
			return fmt.Errorf("mcp: tool %s: no output schema %s", d.name, d.output)
		}
		tool := mcp.NewTool(d.name,
			mcp.WithDescription(d.description),
			mcp.WithToolTitle(d.title),
			mcp.WithTitleAnnotation(d.title),
			mcp.WithReadOnlyHintAnnotation(true),
			mcp.WithDestructiveHintAnnotation(false),
			mcp.WithIdempotentHintAnnotation(true),
			mcp.WithOpenWorldHintAnnotation(false),
		)
		// Raw schemas: NewTool's structured InputSchema must be cleared so
		// that only the raw one is sent.
		tool.InputSchema = mcp.ToolInputSchema{}
		tool.RawInputSchema = in
		tool.RawOutputSchema = out
		s.mcp.AddTool(tool, s.toolHandler(d))
	}
	return nil
}

func (s *Server) toolHandler(d toolDef) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		path, query, summary, err := d.request(req.GetArguments())
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		status, body, err := s.backend.Get(ctx, path, query)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return mcp.NewToolResultError("The AI usage data provider could not be reached: " + err.Error()), nil
		}
		if status < 200 || status > 299 {
			return mcp.NewToolResultError(problemText(status, body)), nil
		}
		doc, err := compact(body)
		if err != nil {
			return mcp.NewToolResultError("The AI usage data provider answered something that is not a JSON object: " + err.Error()), nil
		}
		if summary {
			if doc, err = summarize(doc); err != nil {
				return mcp.NewToolResultError("The AI usage data provider answered a list that is not a list envelope: " + err.Error()), nil
			}
		}
		return mcp.NewToolResultStructured(doc, d.text(doc, query, summary)+"\n\n"+string(doc)), nil
	}
}

// request maps the arguments of a call to the REST path and query. Arguments
// given as null count as not given; an unknown argument is an error naming it.
func (d toolDef) request(args map[string]any) (path string, query url.Values, summary bool, err error) {
	var unknown []string
	for k := range args {
		if _, ok := d.args[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		known := make([]string, 0, len(d.args))
		for k := range d.args {
			known = append(known, k)
		}
		sort.Strings(known)
		return "", nil, false, fmt.Errorf("unknown argument %s: %s takes %s", strings.Join(unknown, ", "), d.name, strings.Join(known, ", "))
	}
	path, query = d.path, url.Values{}
	for _, name := range d.required {
		if args[name] == nil {
			return "", nil, false, fmt.Errorf("argument %s is required", name)
		}
	}
	for name, kind := range d.args {
		v, ok := args[name]
		if !ok || v == nil {
			continue
		}
		switch kind {
		case argString, argPath:
			s, ok := v.(string)
			if !ok {
				return "", nil, false, fmt.Errorf("argument %s must be a string, got %s", name, jsonType(v))
			}
			if kind == argPath {
				if s == "" {
					return "", nil, false, fmt.Errorf("argument %s must not be empty", name)
				}
				path += "/" + url.PathEscape(s)
			} else {
				query.Set(name, s)
			}
		case argInt:
			n, ok := integer(v)
			if !ok {
				return "", nil, false, fmt.Errorf("argument %s must be an integer, got %s", name, jsonType(v))
			}
			query.Set(name, strconv.FormatInt(n, 10))
		case argList:
			items, err := stringList(v)
			if err != nil {
				return "", nil, false, fmt.Errorf("argument %s %v", name, err)
			}
			if len(items) > 0 {
				query.Set(name, strings.Join(items, ","))
			}
		case argLocal: // fields
			s, ok := v.(string)
			if !ok || s != "full" && s != "summary" {
				return "", nil, false, fmt.Errorf(`argument %s must be "full" or "summary", got %s`, name, display(v))
			}
			summary = s == "summary"
		}
	}
	return path, query, summary, nil
}

// integer returns v as an integer when it is a whole number, however the
// arguments were decoded.
func integer(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return 0, false
		}
		return int64(n), true
	case int:
		return int64(n), true
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// stringList accepts an array of strings, or one comma-separated string.
func stringList(v any) ([]string, error) {
	switch l := v.(type) {
	case string:
		if l == "" {
			return nil, nil
		}
		return strings.Split(l, ","), nil
	case []string:
		return l, nil
	case []any:
		out := make([]string, len(l))
		for i, x := range l {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("must be an array of strings, got %s at index %d", jsonType(x), i)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("must be an array of strings, got %s", jsonType(v))
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, int, int64, int32, json.Number:
		return "a number " + display(v)
	case []any, []string:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func display(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}

// compact checks that body is one JSON object and compacts it.
func compact(body []byte) (json.RawMessage, error) {
	var buf bytes.Buffer
	buf.Grow(len(body)) // a page may be megabytes: grow once
	if err := json.Compact(&buf, body); err != nil {
		return nil, err
	}
	if buf.Len() == 0 || buf.Bytes()[0] != '{' {
		return nil, fmt.Errorf("not an object")
	}
	return buf.Bytes(), nil
}

// summarize drops the summaryDropped members from each record of a list
// envelope; the envelope's other members stay as they are.
func summarize(doc json.RawMessage) (json.RawMessage, error) {
	var env map[string]json.RawMessage
	if err := json.Unmarshal(doc, &env); err != nil {
		return nil, err
	}
	var data []map[string]json.RawMessage
	if err := json.Unmarshal(env["data"], &data); err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if data == nil {
		data = []map[string]json.RawMessage{}
	}
	for _, rec := range data {
		for _, k := range summaryDropped {
			delete(rec, k)
		}
	}
	b, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	env["data"] = b
	return json.Marshal(env)
}

// text is the human summary that precedes the JSON in the text content.
func (d toolDef) text(doc json.RawMessage, query url.Values, summary bool) string {
	var env struct {
		Data       []struct{} `json:"data"` // counted, not copied
		HasMore    bool       `json:"hasMore"`
		NextCursor *string    `json:"nextCursor"`
		ID         string     `json:"id"`
	}
	_ = json.Unmarshal(doc, &env) // doc is a JSON object
	if !strings.HasPrefix(d.name, "list_") && d.name != "get_usage" {
		return fmt.Sprintf("The %s %q:", d.noun, env.ID)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", len(env.Data), d.noun)
	if summary {
		b.WriteString(" (summary: without " + strings.Join(summaryDropped, ", ") + ")")
	}
	if env.HasMore && env.NextCursor != nil {
		fmt.Fprintf(&b, "; more follow: call %s again with the same arguments and cursor=%q.", d.name, *env.NextCursor)
	} else if query.Get("cursor") != "" {
		b.WriteString("; this is the last page.")
	} else {
		b.WriteString("; that is all.")
	}
	return b.String()
}

// problemText turns a non-2xx answer into the message of a tool error.
func problemText(status int, body []byte) string {
	var p struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
	}
	_ = json.Unmarshal(body, &p)
	if p.Title == "" {
		p.Title = http.StatusText(status)
	}
	msg := fmt.Sprintf("%s (HTTP %d)", p.Title, status)
	if p.Detail != "" {
		msg += ": " + p.Detail
	}
	switch status {
	case http.StatusBadRequest:
		msg += " Correct the argument named and call again."
	case http.StatusUnauthorized:
		msg += " The server's credential was refused."
	case http.StatusForbidden:
		msg += " The credential in use may not read this; other tools may still work."
	}
	return msg
}
