package dashboard_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/dashboard"
	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

// fullSource is what a provider serves of every resource but usage.
type fullSource struct {
	name       string
	convs      []spec.Conversation
	assistants []spec.Assistant
	events     []spec.Event
}

// addFull serves fs from a memsource provider, adds it as a source of the
// organisation and syncs it; it returns the source's id.
func (e *usageEnv) addFull(t *testing.T, fs fullSource) string {
	t.Helper()
	ctx := t.Context()
	mem := memsource.New()
	for _, c := range fs.convs {
		require.NoError(t, mem.UpsertConversation(ctx, "acme", c))
	}
	for _, a := range fs.assistants {
		require.NoError(t, mem.UpsertAssistant(ctx, "acme", a))
	}
	for _, ev := range fs.events {
		require.NoError(t, mem.AppendEvent(ctx, "acme", ev))
	}
	h, err := provider.NewHandler(mem, provider.WithTokens(provider.Token{Secret: providerToken, Tenant: "acme"}))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: fs.name, URL: srv.URL, Token: providerToken})
	require.NoError(t, err)
	_, err = e.src.SyncNow(ctx, s.ID)
	require.NoError(t, err)
	return s.ID
}

// convsFixture is two sources: one with a full conversation, a thread, an
// assistant and events, and one holding a conversation of the same id.
func convsFixture(t *testing.T, e *usageEnv, longName string) (one, two string) {
	t.Helper()
	at := func(h int) spec.Time { return spec.NewTime(usageDay0.Add(time.Duration(h) * time.Hour)) }
	temp := 0.2
	full := spec.Conversation{ID: "c1", ConversationID: "thread-7", StartedAt: at(1), UpdatedAt: at(2), Status: "completed",
		User:      &spec.User{ID: "u-ann", Email: "Ann.Lee@acme.example", Department: "Legal", Groups: []string{"lawyers"}},
		Assistant: &spec.AssistantRef{ID: "asst-1", Name: "Contract Helper"}, Model: "gpt-large", ModelProvider: "openai",
		Parameters: &spec.Parameters{Temperature: &temp}, SystemPrompt: "Be precise.",
		Messages: []spec.Message{
			{ID: "m1", Role: "user", Content: "Review clause 4 of the supply contract", CreatedAt: at(1)},
			{ID: "m2", Role: "assistant", Content: "Clause 4 limits liability to <b>fees</b> paid.", CreatedAt: at(1)},
			{ID: "m3", Role: "user", Content: "And clause 5?", CreatedAt: at(2)},
		},
		Attachments: []spec.Attachment{{ID: "f1", Kind: "uploaded", Filename: "supply-contract.pdf", MimeType: "application/pdf", Hash: "sha256:abc"}},
		Usage:       &spec.TokenUsage{InputTokens: 1234567, OutputTokens: 890, TotalTokens: 1235457, Cost: 0.5},
		Metadata:    json.RawMessage(`{"workspace":"legal-eu"}`),
	}
	second := conversation("c2", 2, "u-ann", "asst-1", "Follow-up on the supply contract")
	second.ConversationID = "thread-7"
	second.User.Email = "Ann.Lee@acme.example"
	second.Assistant.Name = "Contract Helper"
	zoe := conversation("c3", 3, "u-zoe", "asst-2", "Draft a press release")
	zoe.User.Email = "zq@acme.test" // Zoe Quinn, one of the organisation's people
	long := conversation("c-long", 4, strings.Repeat("x", 200), "asst-long", longName)
	long.Assistant.Name = longName
	long.User.Email = strings.Repeat("y", 190) + "@acme.example"
	var events []spec.Event
	for i := range 30 {
		cat := spec.CategoryAccess
		if i%3 == 0 {
			cat = spec.CategoryConfiguration
		}
		events = append(events, spec.Event{ID: fmt.Sprintf("ev-%02d", i), OccurredAt: at(i % 5), Type: fmt.Sprintf("assistant.updated.%d", i),
			Category: cat, Action: "Updated", Actor: &spec.Actor{Type: "user", ID: "u-ann", Email: "Ann.Lee@acme.example"},
			Target: &spec.Target{Kind: "assistant", ID: "asst-1", Name: "Contract Helper"}, Payload: json.RawMessage(`{"field":"instructions"}`)})
	}
	events[29].Type = longName
	one = e.addFull(t, fullSource{name: "Vendor One", convs: []spec.Conversation{full, second, zoe, long},
		assistants: []spec.Assistant{
			{ID: "asst-1", Name: "Contract Helper", Status: "active", Visibility: "team", Model: "gpt-large", CreatedAt: at(0), UpdatedAt: at(1),
				Owner: &spec.User{ID: "u-ann", Email: "Ann.Lee@acme.example"}, Instructions: "Read contracts carefully.",
				Skills:     []spec.Skill{{ID: "s1", Name: "clause-finder", Type: "function"}},
				Connectors: []spec.Connector{{ID: "k1", Type: "sharepoint", Scopes: []string{"read"}}},
				Usage:      &spec.AssistantUsage{ConversationCount: 12345, UserCount: 7}},
			{ID: "asst-long", Name: longName, CreatedAt: at(0), UpdatedAt: at(3), Description: longName},
		},
		events: events})
	two = e.addFull(t, fullSource{name: "Vendor Two", convs: []spec.Conversation{conversation("c1", 5, "u-bob", "asst-9", "Another c1")}})
	return one, two
}

var linkRe = regexp.MustCompile(`<a href="(/(?:conversations|assistants|events)/[^"]*)"`)

// links returns the record links of a page, unescaped.
func links(body string) []string {
	var out []string
	for _, m := range linkRe.FindAllStringSubmatch(body, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

func TestConversationPage(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newUsageEnv(t, db)
		e.user("zq@acme.test", "Zoe Quinn", people.RoleReviewer)
		one, two := convsFixture(t, e, "Long name")
		b := e.browser()
		b.signIn(t, "rex@acme.test", "/") // a Reviewer reads conversations

		// The list links each conversation to its page, with its source.
		p := b.get(t, "/conversations")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, links(p.Body), "/conversations/c1?source="+one)
		require.Contains(t, links(p.Body), "/conversations/c1?source="+two)

		p = b.get(t, "/conversations/c1?source="+url.QueryEscape(one))
		require.Equal(t, http.StatusOK, p.Status, p.Body)
		body := html.UnescapeString(p.Body)
		i1, i2, i3 := strings.Index(body, "Review clause 4"), strings.Index(body, "Clause 4 limits liability to <b>fees</b> paid."), strings.Index(body, "And clause 5?")
		require.True(t, i1 > 0 && i1 < i2 && i2 < i3, "messages in order, escaped once: %d %d %d", i1, i2, i3)
		require.NotContains(t, p.Body, "<b>fees</b>", "message text is escaped")
		for _, want := range []string{"Vendor One", "Ann.Lee@acme.example", "Legal", "lawyers", "Contract Helper", "gpt-large",
			"openai", "completed", "Be precise.", "supply-contract.pdf", "application/pdf", "legal-eu", "1,234,567 input and 890 output tokens", "; cost USD 0.50",
			`"temperature": 0.2`} {
			require.Contains(t, body, want)
		}
		require.Contains(t, links(p.Body), "/assistants/asst-1?source="+one)
		require.Contains(t, body, `href="/conversations?q=thread-7&source=`+one+`"`)

		// Without a source: the one holding the id, or a choice.
		p = b.get(t, "/conversations/c2")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "Follow-up on the supply contract")
		p = b.get(t, "/conversations/c1")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "Several of your organisation's sources hold")
		require.ElementsMatch(t, []string{"/conversations/c1?source=" + one, "/conversations/c1?source=" + two}, links(p.Body))

		// Unknown ids and sources: 404 pages.
		for _, path := range []string{"/conversations/nope", "/conversations/c2?source=" + two, "/conversations/c1?source=not-a-source",
			"/conversations/" + strings.Repeat("z", 2000)} {
			p = b.get(t, path)
			require.Equal(t, http.StatusNotFound, p.Status, path)
			require.Contains(t, p.Body, "No ", path)
		}

		// Another organisation's Administrator does not see it.
		other, err := e.orgs.CreateOrganisation(t.Context(), orgCreate("Other"), admin)
		require.NoError(t, err)
		_, err = e.people.CreateUser(t.Context(), people.UserCreate{OrganisationID: other.ID, Email: "olga@other.test", Name: "Olga",
			Role: people.RoleAdministrator, Password: password}, admin)
		require.NoError(t, err)
		ob := e.browser()
		ob.signIn(t, "olga@other.test", "/")
		p = ob.get(t, "/conversations/c1?source="+url.QueryEscape(one))
		require.Equal(t, http.StatusNotFound, p.Status)
	})
}

func TestConversationsFilters(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newUsageEnv(t, db)
		e.user("zq@acme.test", "Zoe Quinn", people.RoleReviewer)
		one, two := convsFixture(t, e, "Long name")
		b := e.browser()
		b.signIn(t, "rex@acme.test", "/")
		ids := func(q string) []string {
			t.Helper()
			p := b.get(t, "/conversations?"+q)
			require.Equal(t, http.StatusOK, p.Status, q)
			var out []string
			for _, l := range links(p.Body) {
				u, err := url.Parse(l)
				require.NoError(t, err)
				out = append(out, strings.TrimPrefix(u.Path, "/conversations/")+"@"+u.Query().Get("source"))
			}
			return out
		}
		c := func(id, src string) string { return id + "@" + src }
		require.Equal(t, []string{c("c1", one), c("c2", one)}, ids("user=ann.LEE"), "part of an email, any case")
		require.Equal(t, []string{c("c1", one), c("c2", one)}, ids("user=u-ann"), "part of an id")
		require.Equal(t, []string{c("c3", one)}, ids("user=quinn"), "a name of the organisation's people")
		require.Equal(t, []string{c("c1", one), c("c2", one)}, ids("assistant=contract"), "part of an assistant's name")
		require.Equal(t, []string{c("c1", two)}, ids("source="+url.QueryEscape(two)))
		require.Equal(t, []string{c("c1", one), c("c2", one)}, ids("q=thread-7"), "the thread")
		require.Equal(t, []string{c("c1", one)}, ids("q=CLAUSE+5"), "a message's text")
		require.Equal(t, []string{c("c2", one)}, ids("q=follow-up&source="+url.QueryEscape(one)+"&user=ann"), "filters combine")
		require.Empty(t, ids("user=nobody-at-all"))

		// Suggestions come from the organisation's own data.
		p := b.get(t, "/conversations")
		require.Contains(t, p.Body, `<datalist id="people-list">`)
		require.Contains(t, p.Body, `<option value="Ann.Lee@acme.example">`)
		require.Contains(t, p.Body, `<option value="Contract Helper">`)
		require.Contains(t, p.Body, `<option value="`+two+`">Vendor Two</option>`)

		p = b.get(t, "/conversations?source=not-ours")
		require.Equal(t, http.StatusBadRequest, p.Status)
		require.Contains(t, p.Body, "The parameter source")
		p = b.get(t, "/conversations?q="+strings.Repeat("q", 300))
		require.Equal(t, http.StatusBadRequest, p.Status)
		require.Contains(t, p.Body, "The parameter q")
	})
}

func TestAssistantsAndEventsPages(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newUsageEnv(t, db)
		b := e.browser()
		b.signIn(t, "rex@acme.test", "/")
		p := b.get(t, "/assistants")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "No assistants yet: connect a source")
		one, two := convsFixture(t, e, "Long name")

		p = b.get(t, "/assistants")
		require.Equal(t, http.StatusOK, p.Status)
		require.Equal(t, []string{"/assistants/asst-1?source=" + one, "/assistants/asst-long?source=" + one}, links(p.Body))
		p = b.get(t, "/assistants?source="+url.QueryEscape(two))
		require.Contains(t, p.Body, "No assistant matches this filter.")
		p = b.get(t, "/assistants?since="+usageDay0.AddDate(0, 0, 1).Format("2006-01-02"))
		require.Contains(t, p.Body, "No assistant matches this filter.")

		p = b.get(t, "/assistants/asst-1?source="+url.QueryEscape(one))
		require.Equal(t, http.StatusOK, p.Status)
		for _, want := range []string{"Contract Helper", "Read contracts carefully.", "clause-finder", "sharepoint", "12,345 conversations by 7 people", "team"} {
			require.Contains(t, p.Body, want)
		}
		require.Contains(t, html.UnescapeString(p.Body), `/conversations?assistant=asst-1&source=`+one)
		for _, path := range []string{"/assistants/asst-1?source=" + two, "/assistants/none"} {
			require.Equal(t, http.StatusNotFound, b.get(t, path).Status, path)
		}

		// Events: paged, by category; each links to its page.
		walk := func(path string) []string {
			var out []string
			for pages := 0; path != ""; pages++ {
				require.Less(t, pages, 5)
				p := b.get(t, path)
				require.Equal(t, http.StatusOK, p.Status, p.Body)
				out = append(out, links(p.Body)...)
				path = ""
				if m := regexp.MustCompile(`<a href="(/events\?[^"]*)" rel="next">`).FindStringSubmatch(p.Body); m != nil {
					path = html.UnescapeString(m[1])
				}
			}
			return out
		}
		all := walk("/events")
		require.Len(t, all, 30)
		seen := map[string]bool{}
		for _, l := range all {
			require.False(t, seen[l], "no event twice: %s", l)
			seen[l] = true
		}
		require.Len(t, walk("/events?category=Configuration"), 10)
		require.Len(t, walk("/events?category=Access&source="+url.QueryEscape(one)), 20)
		require.Empty(t, walk("/events?source="+url.QueryEscape(two)))

		p = b.get(t, all[0])
		require.Equal(t, http.StatusOK, p.Status, all[0])
		require.Contains(t, p.Body, "&#34;field&#34;: &#34;instructions&#34;")
		require.Contains(t, html.UnescapeString(p.Body), "/assistants/asst-1?source="+one)
		u, err := url.Parse(all[0])
		require.NoError(t, err)
		q := u.Query()
		q.Set("at", "2020-01-01T00:00:00.000Z")
		for _, path := range []string{u.Path + "?" + q.Encode(), u.Path, "/events/none?source=" + one + "&at=" + url.QueryEscape(u.Query().Get("at"))} {
			require.Equal(t, http.StatusNotFound, b.get(t, path).Status, path)
		}

		// Bad parameters: 400 naming them.
		for path, name := range map[string]string{
			"/events?category=Bogus":   "category",
			"/events?since=2025-13-01": "since",
			"/assistants?next=!!":      "next",
			"/events?source=nope":      "source",
			"/assistants?next=" + dashboardKey(`{"t":"2025-01-01T00:00:00Z","id":"x","more":1}`): "next",
		} {
			p = b.get(t, path)
			require.Equal(t, http.StatusBadRequest, p.Status, path)
			require.Contains(t, p.Body, "The parameter "+name, path)
		}
		_ = dashboard.RecordsPerPage
	})
}

func orgCreate(name string) org.OrganisationCreate { return org.OrganisationCreate{Name: name} }

// dashboardKey is a next parameter of the assistants and events lists
// holding js.
func dashboardKey(js string) string { return base64.RawURLEncoding.EncodeToString([]byte(js)) }

// TestConversationsScanBound: a search by person reads at most
// ConversationScanLimit conversations per page, then offers to search on.
func TestConversationsScanBound(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newUsageEnv(t, db)
	n := dashboard.ConversationScanLimit + 50
	var convs []spec.Conversation
	for i := range n {
		convs = append(convs, conversation(fmt.Sprintf("bulk-%04d", i), i, "bulk", "a0", "Routine"))
	}
	convs[n-1].User = &spec.User{ID: "rare", Email: "rare@acme.example"} // the oldest
	e.addFull(t, fullSource{name: "Busy", convs: convs})
	b := e.browser()
	b.signIn(t, "rex@acme.test", "/")
	p := b.get(t, "/conversations?user=RARE")
	require.Equal(t, http.StatusOK, p.Status)
	require.Contains(t, p.Body, fmt.Sprintf("None of the %s conversations read so far matches.", num(int64(dashboard.ConversationScanLimit))))
	m := nextRe.FindStringSubmatch(p.Body)
	require.NotNil(t, m, "a link searches on")
	p = b.get(t, html.UnescapeString(m[1]))
	require.Equal(t, http.StatusOK, p.Status)
	require.Len(t, links(p.Body), 1)
	require.Contains(t, links(p.Body)[0], "/conversations/bulk-"+fmt.Sprintf("%04d", n-1)+"?")
	require.NotRegexp(t, nextRe, p.Body)
}
