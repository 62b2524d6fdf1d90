package dashboard

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/aiusage/kit/consumer/sqlstore"
)

// The conversations search's part that the collected view cannot do: it
// finds conversations by time range and source through its index, and the
// dashboard matches person, assistant and text over what it reads, a
// bounded number of conversations per page.

// ConversationScanLimit is the most conversations one page of a search by
// person, assistant or text reads; when fewer than a page's worth match
// among them, the page offers to search on, older, from where it stopped.
const ConversationScanLimit = 1000

// scanBatch is how many conversations a search by person, assistant or text
// asks the collected view for at a time.
const scanBatch = 100

// suggestScan is how many of the newest conversations the suggestions of the
// person and assistant fields come from; maxSuggestions bounds each list.
const (
	suggestScan    = 200
	maxSuggestions = 50
)

// convMatch reports whether a conversation the collected view found matches
// the parts of a search it cannot do itself; nil matches every one.
type convMatch func(f *sqlstore.FoundConversation) bool

type scanResult struct {
	found   []sqlstore.FoundConversation
	next    *sqlstore.ConversationPosition // where the next page starts; nil on the last
	scanned int
	stopped bool // ConversationScanLimit was reached before a page filled
}

// scanConversations reads search's conversations, newest first, and keeps
// those match keeps: up to a page (ConversationsPerPage), reading at most
// ConversationScanLimit.
func (d *Dashboard) scanConversations(r *http.Request, orgID string, search sqlstore.ConversationSearch, match convMatch) (scanResult, error) {
	var res scanResult
	search.Limit = scanBatch
	if match == nil {
		search.Limit = ConversationsPerPage // every one is kept: read a page
	}
	for {
		page, err := d.cfg.Sources.SearchConversations(r.Context(), orgID, search)
		if err != nil {
			return res, err
		}
		for i := range page.Items {
			f := &page.Items[i]
			res.scanned++
			if match != nil && !match(f) {
				continue
			}
			res.found = append(res.found, *f)
			if len(res.found) == ConversationsPerPage {
				if i < len(page.Items)-1 || page.Next != nil {
					pos := f.Position
					res.next = &pos
				}
				return res, nil
			}
		}
		if page.Next == nil {
			return res, nil
		}
		if res.scanned >= ConversationScanLimit {
			res.stopped, res.next = true, page.Next
			return res, nil
		}
		search.After = page.Next
	}
}

// conversationMatcher returns the match of cq's person, assistant and text;
// nil when it has none. A person matches by a part of their email or id, or
// of the name of one of the organisation's people with their email.
func (d *Dashboard) conversationMatcher(r *http.Request, cq conversationQuery) (convMatch, error) {
	user, asst, text := strings.ToLower(cq.User), strings.ToLower(cq.Assistant), strings.ToLower(cq.Text)
	if user == "" && asst == "" && text == "" {
		return nil, nil
	}
	named := map[string]bool{} // emails of the organisation's people whose name matches
	if user != "" {
		ppl, err := d.cfg.People.Users(r.Context(), viewerOf(r).Organisation.ID)
		if err != nil {
			return nil, err
		}
		for _, u := range ppl {
			if contains(u.Name, user) {
				named[strings.ToLower(u.Email)] = true
			}
		}
	}
	return func(f *sqlstore.FoundConversation) bool {
		c := &f.Conversation
		if user != "" {
			u := c.User
			if u == nil || !(contains(u.Email, user) || contains(u.ID, user) || named[strings.ToLower(u.Email)]) {
				return false
			}
		}
		if asst != "" {
			a := c.Assistant
			if a == nil || !(contains(a.Name, asst) || contains(a.ID, asst)) {
				return false
			}
		}
		return text == "" || textMatches(f, text)
	}, nil
}

// textMatches reports whether f's ids, title, model or a message hold text
// (lower case).
func textMatches(f *sqlstore.FoundConversation, text string) bool {
	c := &f.Conversation
	if contains(c.ID, text) || contains(c.ConversationID, text) || contains(c.Model, text) || contains(titleOf(f.JSON), text) {
		return true
	}
	for _, m := range c.Messages {
		if contains(m.Content, text) {
			return true
		}
	}
	return false
}

// contains reports whether s holds sub (lower case), ignoring case.
func contains(s, sub string) bool { return s != "" && strings.Contains(strings.ToLower(s), sub) }

// titleOf returns the title member of a conversation's JSON: no member of
// the specification, but a record may carry one.
func titleOf(js json.RawMessage) string {
	var extra struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(js, &extra)
	return strings.TrimSpace(extra.Title)
}

// suggestions are the values the person and assistant fields suggest:
// the emails and assistant names of the organisation's newest
// conversations, and the names of its assistants.
type suggestions struct {
	People, Assistants []string
}

// suggestions reads the suggestions of organisation orgID.
func (d *Dashboard) suggestions(r *http.Request, orgID string) (*suggestions, error) {
	page, err := d.cfg.Sources.SearchConversations(r.Context(), orgID, sqlstore.ConversationSearch{Limit: suggestScan})
	if err != nil {
		return nil, err
	}
	people, assistants := map[string]bool{}, map[string]bool{}
	for _, f := range page.Items {
		if u := f.Conversation.User; u != nil && len(people) < maxSuggestions {
			people[cmp.Or(u.Email, u.ID)] = true
		}
		if a := f.Conversation.Assistant; a != nil && len(assistants) < maxSuggestions {
			assistants[cmp.Or(a.Name, a.ID)] = true
		}
	}
	delete(people, "")
	delete(assistants, "")
	return &suggestions{People: sortedKeys(people), Assistants: sortedKeys(assistants)}, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// conversationLink is the path of the page of conversation id of source.
func conversationLink(id, source string) string {
	return "/conversations/" + url.PathEscape(id) + "?source=" + url.QueryEscape(source)
}
