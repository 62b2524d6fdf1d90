package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Resource URI templates.
const (
	ConversationURITemplate = "aiusage://conversations/{id}"
	AssistantURITemplate    = "aiusage://assistants/{id}"
)

// ErrNoRecord is wrapped by the error of a resource read whose record does
// not exist (resources have no isError: a read of an unknown id fails).
var ErrNoRecord = errors.New("no such record")

func (s *Server) addResources() {
	for _, r := range []struct {
		template, name, title, description, prefix, restPath string
	}{
		{ConversationURITemplate, "conversation", "AI conversation",
			"One conversation whole, as JSON: the record get_conversation returns.",
			"aiusage://conversations/", "/conversations/"},
		{AssistantURITemplate, "assistant", "Custom AI assistant",
			"One custom AI assistant, as JSON: the record get_assistant returns.",
			"aiusage://assistants/", "/assistants/"},
	} {
		t := mcp.NewResourceTemplate(r.template, r.name,
			mcp.WithTemplateTitle(r.title),
			mcp.WithTemplateDescription(r.description),
			mcp.WithTemplateMIMEType("application/json"))
		s.mcp.AddResourceTemplate(t, s.resourceHandler(r.prefix, r.restPath))
	}
}

func (s *Server) resourceHandler(prefix, restPath string) server.ResourceTemplateHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		uri := req.Params.URI
		raw, ok := strings.CutPrefix(uri, prefix)
		if !ok || raw == "" || strings.ContainsAny(raw, "/?#") {
			return nil, fmt.Errorf("resource %s: want %s{id}", uri, prefix)
		}
		id, err := url.PathUnescape(raw)
		if err != nil {
			return nil, fmt.Errorf("resource %s: the id is not a valid URI segment", uri)
		}
		status, body, err := s.backend.Get(ctx, restPath+url.PathEscape(id), nil)
		if err != nil {
			return nil, fmt.Errorf("resource %s: the AI usage data provider could not be reached: %w", uri, err)
		}
		if status == 404 {
			return nil, fmt.Errorf("resource %s: %w: %s", uri, ErrNoRecord, problemText(status, body))
		}
		if status < 200 || status > 299 {
			return nil, fmt.Errorf("resource %s: %s", uri, problemText(status, body))
		}
		doc, err := compact(body)
		if err != nil {
			return nil, fmt.Errorf("resource %s: the provider answered something that is not a JSON object: %w", uri, err)
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(doc)}}, nil
	}
}
