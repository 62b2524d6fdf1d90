package dashboard

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/spec"
)

// The page of one conversation of the organisation's view: its messages in
// the order its source gave them, the person, the assistant, the source.
// An id is unique only within its source, so the lists link to
// /conversations/{id}?source={sourceId}; without a source, every source of
// the organisation is looked in, and an id several of them hold asks which.

type messageView struct {
	ID, Role, Content, Created string
}

type conversationView struct {
	C          spec.Conversation
	Title      string
	SourceID   string
	SourceName string
	Messages   []messageView
	Parameters string // indented JSON; "" without
	Metadata   string // indented JSON; "" without
	Usage      string // the tokens and cost, in words; "" without
	// Links to the searches of the same person, assistant and thread.
	PersonLink, AssistantLink, ThreadLink string
	PersonUsageLink                       string            // the person's usage page
	Choices                               []conversationRow // several sources hold the id: pick one
}

// maxIDLength is the longest record id a page looks up, in bytes: the
// longest the kit's stores hold.
const maxIDLength = 1024

// recordRef is the id and source of a single record a page reads, from its
// path and query.
func recordRef(r *http.Request, param string) (id, source string, ok bool) {
	id, err := url.PathUnescape(chi.URLParam(r, param))
	if err != nil || id == "" || len(id) > maxIDLength {
		return "", "", false
	}
	return id, r.URL.Query().Get("source"), true
}

// orgSources returns the organisation's sources that may hold a record:
// the one named by source, or all of them when source is "". A source
// that is not the organisation's gives none.
func (d *Dashboard) orgSources(ctx context.Context, orgID, source string) ([]sources.Source, error) {
	srcs, err := d.cfg.Sources.List(ctx, orgID)
	if err != nil || source == "" {
		return srcs, err
	}
	for _, s := range srcs {
		if s.ID == source {
			return []sources.Source{s}, nil
		}
	}
	return nil, nil
}

// lookup reads record id of each of srcs with get and returns those found,
// with the source of each.
func lookup(ctx context.Context, srcs []sources.Source, id string,
	get func(ctx context.Context, source, id string) (json.RawMessage, error)) ([]json.RawMessage, []sources.Source, error) {
	var found []json.RawMessage
	var in []sources.Source
	for _, s := range srcs {
		js, err := get(ctx, s.ID, id)
		if errors.Is(err, spec.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		found, in = append(found, js), append(in, s)
	}
	return found, in, nil
}

// conversationPage shows one conversation.
func (d *Dashboard) conversationPage(w http.ResponseWriter, r *http.Request) error {
	id, source, ok := recordRef(r, "conversationId")
	if !ok || d.cfg.Sources == nil {
		d.errorPage(w, r, http.StatusNotFound, "No such conversation in your organisation's sources.")
		return nil
	}
	ctx := r.Context()
	srcs, err := d.orgSources(ctx, viewerOf(r).Organisation.ID, source)
	if err != nil {
		return err
	}
	found, in, err := lookup(ctx, srcs, id, d.cfg.Sources.Store().GetConversationRaw)
	if err != nil {
		return err
	}
	switch len(found) {
	case 0:
		d.errorPage(w, r, http.StatusNotFound, fmt.Sprintf("No conversation %q in your organisation's sources. "+
			"Find it in the list of conversations.", excerpt(id, 80)))
		return nil
	case 1:
	default:
		v := conversationView{C: spec.Conversation{ID: id}}
		for i, js := range found {
			var c spec.Conversation
			if err := json.Unmarshal(js, &c); err != nil {
				return fmt.Errorf("dashboard: conversation %q of source %s: %w", id, in[i].ID, err)
			}
			v.Choices = append(v.Choices, rowOf(foundOf(c, js, in[i].ID), map[string]string{in[i].ID: in[i].Name}, zoneOf(r)))
		}
		d.render(w, r, http.StatusOK, "conversation", &pageData{Title: "Conversation " + excerpt(id, 60), Nav: "conversations", Data: &v})
		return nil
	}
	v, err := conversationViewOf(found[0], in[0], zoneOf(r))
	if err != nil {
		return err
	}
	title := v.Title
	if title == "" {
		title = "Conversation " + excerpt(id, 60)
	}
	d.render(w, r, http.StatusOK, "conversation", &pageData{Title: title, Nav: "conversations", Data: v})
	return nil
}

// conversationViewOf is how the page shows conversation js of src.
func conversationViewOf(js json.RawMessage, src sources.Source, zone *time.Location) (*conversationView, error) {
	v := &conversationView{SourceID: src.ID, SourceName: src.Name}
	if err := json.Unmarshal(js, &v.C); err != nil {
		return nil, fmt.Errorf("dashboard: conversation of source %s: %w", src.ID, err)
	}
	c := &v.C
	v.Title = excerpt(titleOf(js), excerptLength)
	if v.Title == "" {
		for _, m := range c.Messages {
			if t := strings.TrimSpace(m.Content); t != "" && (m.Role == spec.RoleUser || m.Role == "") {
				v.Title = excerpt(t, excerptLength)
				break
			}
		}
	}
	for _, m := range c.Messages {
		v.Messages = append(v.Messages, messageView{ID: m.ID, Role: cmp.Or(m.Role, "message"), Content: m.Content, Created: date(m.CreatedAt, zone)})
	}
	if c.Parameters != nil {
		v.Parameters = indentJSON(mustJSON(c.Parameters))
	}
	v.Metadata = indentJSON(c.Metadata)
	if u := c.Usage; u != nil {
		v.Usage = thousands(u.InputTokens) + " input and " + thousands(u.OutputTokens) + " output tokens"
		if u.TotalTokens != 0 {
			v.Usage += ", " + thousands(u.TotalTokens) + " in total"
		}
		if u.Cost != 0 {
			v.Usage += "; cost " + money(u.Cost) // costs in the data are USD, as on the usage page
		}
	}
	search := func(k, val string) string {
		return "/conversations?" + url.Values{k: {val}, "source": {src.ID}}.Encode()
	}
	if u := c.User; u != nil && (u.Email != "" || u.ID != "") {
		v.PersonLink = "/conversations?" + url.Values{"user": {cmp.Or(u.Email, u.ID)}}.Encode()
		// Their usage over the 30 days up to the conversation's.
		to := c.StartedAt.UTC()
		uq := usageQuery{From: to.AddDate(0, 0, 1-defaultDays).Format(dateLayout), To: to.Format(dateLayout),
			Granularity: spec.GranularityDay, Metric: defaultUsageMetr}
		v.PersonUsageLink = usageLink(uq, cmp.Or(u.Email, u.ID))
	}
	if a := c.Assistant; a != nil && a.ID != "" {
		v.AssistantLink = "/assistants/" + url.PathEscape(a.ID) + "?source=" + url.QueryEscape(src.ID)
	}
	if c.ConversationID != "" {
		v.ThreadLink = search("q", c.ConversationID)
	}
	return v, nil
}

// foundOf is conversation c (JSON js) of source as a search finds it.
func foundOf(c spec.Conversation, js json.RawMessage, source string) sqlstore.FoundConversation {
	return sqlstore.FoundConversation{Source: source, JSON: js, Conversation: c}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// indentJSON returns js indented for reading; "" for nothing or null.
func indentJSON(js json.RawMessage) string {
	if len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, js, "", "  "); err != nil {
		return string(js)
	}
	return buf.String()
}
