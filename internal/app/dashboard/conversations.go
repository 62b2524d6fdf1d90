package dashboard

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aiusage/kit/consumer/sqlstore"
)

// The conversations page: the organisation's conversations, of every
// source, searchable by user, assistant and time range, newest first.

// ConversationsPerPage is how many conversations a page of the search lists.
const ConversationsPerPage = 25

// maxFilterLength bounds each text field of the search, in bytes.
const maxFilterLength = 256

// excerptLength bounds a conversation's excerpt, in characters.
const excerptLength = 140

// conversationQuery is the search as the form sends it: User matches a
// person's email, id or (for the organisation's own people) name, Assistant
// an assistant's name or id, Text the conversation's title, messages and
// ids; all three case-insensitively, in part. Source is a source id.
type conversationQuery struct {
	User, Assistant, Source, Text, From, To string
}

type conversationRow struct {
	Link      string // the conversation's page
	Source    string
	ID        string
	Title     string // the record's title, or its first message
	Untitled  bool   // neither: Title is empty
	User      string
	UserID    string // shown too when User is an email
	Assistant string
	Started   string
	Messages  int
	Status    string
}

type conversationsData struct {
	Query     conversationQuery
	Filtered  bool
	Invalid   bool
	NoService bool
	NoSources bool
	Paged     bool   // a later page: offer the first
	First     string // the first page's URL
	Next      string // the next page's URL; "" on the last
	Rows      []conversationRow
	Sources   []option     // the organisation's sources, for the source filter
	Suggest   *suggestions // values for the person and assistant fields
	Scanned   int          // how many conversations this page read
	Stopped   bool         // the page read ConversationScanLimit without filling up
}

// option is one choice of a select.
type option struct{ Value, Label string }

// position is the JSON of a search's position in the next link.
type position struct {
	StartedAt time.Time `json:"startedAt"`
	ID        string    `json:"id"`
	Source    string    `json:"source"`
}

func encodePosition(p sqlstore.ConversationPosition) string {
	b, _ := json.Marshal(position{StartedAt: p.StartedAt.UTC(), ID: p.ID, Source: p.Source})
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodePosition reads what encodePosition wrote; anything else (a link
// edited by hand) is refused.
func decodePosition(s string) (*sqlstore.ConversationPosition, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) > 2048 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p position
	if err := dec.Decode(&p); err != nil || dec.More() || p.ID == "" || p.Source == "" || p.StartedAt.IsZero() {
		return nil, false
	}
	pos := sqlstore.ConversationPosition{StartedAt: p.StartedAt.UTC(), ID: p.ID, Source: p.Source}
	if encodePosition(pos) != s { // only the canonical form
		return nil, false
	}
	return &pos, true
}

// conversations lists the organisation's conversations that match the
// search, newest first.
//
// The source and time range select what the collected view reads, through
// its index; the person, assistant and text are matched here, over what it
// reads (see scanConversations): a page reads at most ConversationScanLimit
// conversations, and when it found fewer than a page's worth within them it
// offers to search on from where it stopped.
func (d *Dashboard) conversations(w http.ResponseWriter, r *http.Request) error {
	p := &pageData{Title: "Conversations", Nav: "conversations"}
	q := r.URL.Query()
	cq := conversationQuery{User: strings.TrimSpace(q.Get("user")), Assistant: strings.TrimSpace(q.Get("assistant")),
		Source: q.Get("source"), Text: strings.TrimSpace(q.Get("q")), From: q.Get("from"), To: q.Get("to")}
	data := conversationsData{Query: cq, Filtered: cq != conversationQuery{}}
	p.Data = &data
	refuse := func(msg string) error {
		p.Error, data.Invalid = msg, true
		d.render(w, r, http.StatusBadRequest, "conversations", p)
		return nil
	}
	search, err := parseConversationSearch(cq, q.Get("next"))
	if err != nil {
		return refuse(err.Error())
	}
	data.Paged = search.After != nil
	filters := cq.values()
	data.First = "/conversations"
	if len(filters) > 0 {
		data.First += "?" + filters.Encode()
	}

	if d.cfg.Sources == nil {
		data.NoService = true
		d.render(w, r, http.StatusOK, "conversations", p)
		return nil
	}
	ctx := r.Context()
	orgID := viewerOf(r).Organisation.ID
	srcs, err := d.cfg.Sources.List(ctx, orgID)
	if err != nil {
		return err
	}
	if len(srcs) == 0 {
		data.NoSources = true
		d.render(w, r, http.StatusOK, "conversations", p)
		return nil
	}
	names := make(map[string]string, len(srcs))
	for _, s := range srcs {
		names[s.ID] = s.Name
		data.Sources = append(data.Sources, option{Value: s.ID, Label: s.Name})
	}
	if cq.Source != "" {
		if _, ok := names[cq.Source]; !ok {
			return refuse("The parameter source names no source of your organisation; pick one from the list.")
		}
		search.Sources = []string{cq.Source}
	}
	match, err := d.conversationMatcher(r, cq)
	if err != nil {
		return err
	}
	res, err := d.scanConversations(r, orgID, search, match)
	if msg, status, ok := clientMessage(err); ok {
		p.Error, data.Invalid = msg, true
		d.render(w, r, status, "conversations", p)
		return nil
	} else if err != nil {
		return err
	}
	for _, f := range res.found {
		data.Rows = append(data.Rows, rowOf(f, names, zoneOf(r)))
	}
	data.Scanned, data.Stopped = res.scanned, res.stopped
	if res.next != nil {
		filters.Set("next", encodePosition(*res.next))
		data.Next = "/conversations?" + filters.Encode()
	}
	if data.Suggest, err = d.suggestions(r, orgID); err != nil {
		return err
	}
	d.render(w, r, http.StatusOK, "conversations", p)
	return nil
}

// parseConversationSearch checks the search's parameters and returns what
// the collected view is asked: the time range and the position of next.
func parseConversationSearch(cq conversationQuery, next string) (sqlstore.ConversationSearch, error) {
	search := sqlstore.ConversationSearch{Limit: scanBatch}
	for _, f := range []struct{ name, v string }{{"user", cq.User}, {"assistant", cq.Assistant}, {"q", cq.Text}, {"source", cq.Source}} {
		if len(f.v) > maxFilterLength || !utf8.ValidString(f.v) {
			return search, badParamf("The parameter %s must be text of at most 256 bytes.", f.name)
		}
	}
	var err error
	if cq.From != "" {
		if search.From, err = parseDate("from", cq.From, time.Time{}); err != nil {
			return search, err
		}
	}
	if cq.To != "" {
		if search.To, err = parseDate("to", cq.To, time.Time{}); err != nil {
			return search, err
		}
		search.To = search.To.Add(24 * time.Hour) // to is included
	}
	if !search.From.IsZero() && !search.To.IsZero() && !search.To.After(search.From) {
		return search, badParamf("The parameter to (%s) is before from (%s).", cq.To, cq.From)
	}
	if next != "" {
		pos, ok := decodePosition(next)
		if !ok {
			return search, badParamf("The parameter next is not a position this page gave; start again from the first page.")
		}
		search.After = pos
	}
	return search, nil
}

// values are the query's parameters, for the links of its pages.
func (cq conversationQuery) values() url.Values {
	filters := url.Values{}
	for k, v := range map[string]string{"user": cq.User, "assistant": cq.Assistant, "source": cq.Source, "q": cq.Text,
		"from": cq.From, "to": cq.To} {
		if v != "" {
			filters.Set(k, v)
		}
	}
	return filters
}

// rowOf is how the list shows f.
func rowOf(f sqlstore.FoundConversation, names map[string]string, zone *time.Location) conversationRow {
	c := f.Conversation
	row := conversationRow{Link: conversationLink(c.ID, f.Source), Source: names[f.Source], ID: c.ID, Messages: len(c.Messages), Status: c.Status,
		Started: date(c.StartedAt, zone)}
	if row.Source == "" {
		row.Source = f.Source
	}
	row.Title = titleOf(f.JSON)
	if row.Title == "" {
		for _, m := range c.Messages {
			if t := strings.TrimSpace(m.Content); t != "" && (m.Role == "user" || m.Role == "") {
				row.Title = t
				break
			}
		}
	}
	row.Title = excerpt(row.Title, excerptLength)
	row.Untitled = row.Title == ""
	if u := c.User; u != nil {
		row.User = u.Email
		if row.User == "" {
			row.User = u.ID
		} else {
			row.UserID = u.ID
		}
	}
	if a := c.Assistant; a != nil {
		row.Assistant = a.Name
		if row.Assistant == "" {
			row.Assistant = a.ID
		} else if a.ID != "" {
			row.Assistant += " (" + a.ID + ")"
		}
	}
	return row
}

// excerpt shortens s to n characters at most, on one line.
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
