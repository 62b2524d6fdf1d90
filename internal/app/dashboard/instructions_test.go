package dashboard_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// apiKey returns the secret of a new API key of e's organisation.
func (e *env) apiKey(t *testing.T) string {
	t.Helper()
	k, err := e.orgs.CreateKey(t.Context(), org.KeyCreate{OrganisationID: e.org.ID, Name: "test-api", Type: org.KeyTypeAPI}, admin)
	require.NoError(t, err)
	return k.Secret
}

// apiList returns the API's answer to GET .../instructions?query.
func (e *env) apiList(t *testing.T, key, query string) spec.InstructionList {
	t.Helper()
	status, body := e.api(t, http.MethodGet, "/organisations/"+e.org.ID+"/instructions?"+query, key, "")
	require.Equal(t, http.StatusOK, status, body)
	var l spec.InstructionList
	require.NoError(t, json.Unmarshal([]byte(body), &l))
	return l
}

// allInstructions returns every instruction of e's organisation.
func (e *env) allInstructions(t *testing.T) []spec.Instruction {
	t.Helper()
	l, err := e.orgs.ListInstructions(t.Context(), e.org.ID, org.InstructionQuery{PageSize: org.MaxPageSize})
	require.NoError(t, err)
	return l.Items
}

func (e *env) instruction(t *testing.T, title string) spec.Instruction {
	t.Helper()
	for _, in := range e.allInstructions(t) {
		if in.Title == title {
			return in
		}
	}
	t.Fatalf("no instruction %q", title)
	return spec.Instruction{}
}

var editLinkRe = regexp.MustCompile(`href="/instructions/([0-9a-f-]{36})/edit"`)

// listedIDs returns the ids of the instructions a list page shows, in order.
func listedIDs(body string) []string {
	out := []string{}
	for _, m := range editLinkRe.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func regexForm(title, pattern string, agents ...string) url.Values {
	return url.Values{"title": {title}, "agentType": {"DataProtection"}, "triggerType": {"Regex"}, "pattern": {pattern},
		"values": {""}, "text": {""}, "action": {"Block"}, "criticality": {"High"}, "categoryId": {""},
		"assessmentId": {""}, "usedBy": agents}
}

// with returns f with the pairs of kv set.
func with(f url.Values, kv ...string) url.Values {
	for i := 0; i+1 < len(kv); i += 2 {
		f.Set(kv[i], kv[i+1])
	}
	return f
}

func TestInstructionPagesRoles(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		adm, rev := e.browser(), e.browser()
		adm.signIn(t, "ada@acme.test", "/")
		rev.signIn(t, "rex@acme.test", "/")
		id := e.instruction(t, "Mergers").ID

		for _, b := range []*browser{adm, rev} {
			home := b.get(t, "/").Body
			require.Contains(t, home, `<a href="/agents"`)
			require.Contains(t, home, `<a href="/instructions"`)
		}
		p := rev.get(t, "/instructions")
		require.Equal(t, http.StatusOK, p.Status)
		requireSecurityHeaders(t, p)
		require.Contains(t, p.Body, "Mergers")
		require.Contains(t, p.Body, "Project Falcon")
		require.NotContains(t, p.Body, "/instructions/new")
		require.NotContains(t, p.Body, "/edit")
		require.NotContains(t, p.Body, "/delete")
		p = rev.get(t, "/agents")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "Support")
		require.Contains(t, p.Body, "1 of 100")
		require.NotContains(t, p.Body, `action="/agents"`)

		a := adm.get(t, "/instructions").Body
		require.Contains(t, a, `href="/instructions/new"`)
		require.Contains(t, a, `href="/instructions/`+id+`/edit"`)
		require.Contains(t, a, `action="/instructions/`+id+`/delete"`)
		require.Contains(t, adm.get(t, "/agents").Body, `action="/agents"`)

		for _, path := range []string{"/instructions/new", "/instructions/" + id + "/edit"} {
			p := rev.get(t, path)
			require.Equal(t, http.StatusForbidden, p.Status, path)
			require.Contains(t, p.Body, "Only an Administrator may open this page.")
			require.Equal(t, http.StatusOK, adm.get(t, path).Status, path)
		}
		for _, c := range []struct {
			path string
			form url.Values
		}{
			{"/instructions", regexForm("sneaky", "x", e.agent.ID)},
			{"/instructions/" + id, regexForm("sneaky", "x")},
			{"/instructions/" + id + "/delete", url.Values{}},
			{"/agents", url.Values{"name": {"sneaky"}}},
		} {
			p := rev.post(t, c.path, c.form)
			require.Equal(t, http.StatusForbidden, p.Status, c.path)
		}
		all := e.allInstructions(t)
		require.Len(t, all, 1, "a reviewer's forms changed nothing")
		require.Equal(t, "Mergers", all[0].Title)
		agents, err := e.orgs.Agents(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Len(t, agents, 1)
	})
}

func TestAgentsPage(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		adm := e.browser()
		adm.signIn(t, "ada@acme.test", "/agents")
		p := adm.post(t, "/agents", url.Values{"name": {"  Billing  "}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, "/agents?done=created", p.location())
		body := adm.get(t, "/agents?done=created").Body
		require.Contains(t, body, "The agent is created.")
		require.Contains(t, body, `<td data-label="Name">Billing</td>`)
		require.Contains(t, body, "0 of 100")

		p = adm.post(t, "/agents", url.Values{"name": {"   "}})
		require.Equal(t, http.StatusBadRequest, p.Status)
		require.Contains(t, p.Body, `role="alert"`)
		require.Contains(t, p.Body, "must not be empty")

		agents, err := e.orgs.Agents(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Len(t, agents, 2)
		require.Equal(t, "Billing", agents[1].Name)
		audit, err := e.orgs.Audit(t.Context(), e.org.ID, 0, 100)
		require.NoError(t, err)
		last := audit[len(audit)-1]
		require.Equal(t, org.ActorUser, last.Actor.Type)
		require.Equal(t, e.admin.ID, last.Actor.ID)
	})
}

// TestInstructionFormMatchesAPI creates an instruction with the form and
// one with the API from the same input: the API returns them alike.
func TestInstructionFormMatchesAPI(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		key := e.apiKey(t)
		adm := e.browser()
		adm.signIn(t, "ada@acme.test", "/instructions")
		const category = "0F8FAD5B-D9CB-469F-A165-70867728950E"
		form := regexForm("Falcon codes", `FALCON-\d{4}`, strings.ToUpper(e.agent.ID))
		form.Set("categoryId", category)
		form.Set("allowRedaction", "true")
		form.Set("assessmentId", "as-1")
		// isCaseSensitive unchecked: not sent.
		p := adm.post(t, "/instructions", form)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, "/instructions?done=created", p.location())
		list := adm.get(t, "/instructions?done=created").Body
		require.Contains(t, list, "The instruction is created.")
		require.Contains(t, list, "Falcon codes")

		got := e.apiList(t, key, "search=falcon-")
		require.Len(t, got.Items, 1)
		viaForm := got.Items[0]

		status, body := e.api(t, http.MethodPost, "/organisations/"+e.org.ID+"/instructions", key,
			`{"agentType":"DataProtection","title":"Falcon codes","trigger":{"type":"Regex","pattern":"FALCON-\\d{4}","isCaseSensitive":false},`+
				`"action":"Block","criticality":"High","categoryId":"`+category+`","usedBy":["`+strings.ToUpper(e.agent.ID)+`"],`+
				`"allowRedaction":true,"assessmentId":"as-2"}`)
		require.Equal(t, http.StatusCreated, status, body)
		var viaAPI spec.Instruction
		require.NoError(t, json.Unmarshal([]byte(body), &viaAPI))

		require.Equal(t, strings.ToLower(category), *viaForm.CategoryID)
		require.Nil(t, viaForm.AssessmentID, "a person creating an instruction gives no assessment id")
		require.Equal(t, []string{e.agent.ID}, viaForm.UsedBy)
		require.False(t, *viaForm.Trigger.IsCaseSensitive)
		for _, in := range []*spec.Instruction{&viaForm, &viaAPI} {
			in.ID, in.CreatedAt, in.UpdatedAt, in.AssessmentID = "", spec.Time{}, spec.Time{}, nil
		}
		require.Equal(t, viaAPI, viaForm)

		// The audit trail names the signed-in user.
		audit, err := e.orgs.Audit(t.Context(), e.org.ID, 0, 100)
		require.NoError(t, err)
		var byUser []string
		for _, a := range audit {
			if a.Actor.Type == org.ActorUser && a.Actor.ID == e.admin.ID {
				byUser = append(byUser, a.Action)
			}
		}
		require.Equal(t, []string{org.AuditInstructionCreated}, byUser)
	})
}

func TestInstructionFormErrors(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		adm := e.browser()
		adm.signIn(t, "ada@acme.test", "/instructions/new")
		require.Contains(t, adm.get(t, "/instructions/new").Body, `<option value="Regex" selected>`)

		semantic := with(regexForm("Vague", ""), "triggerType", "Semantic", "text", "talk of mergers", "allowRedaction", "true")
		for _, c := range []struct {
			name  string
			form  url.Values
			field string
			want  []string // in the page, besides the field
		}{
			{"invalid regex", regexForm("Codes", `FALCON-(\d+`, e.agent.ID), "trigger.pattern",
				[]string{"invalid RE2 syntax", `value="FALCON-(\d&#43;"`, `aria-describedby="h-pattern e-pattern" aria-invalid="true"`}},
			{"costly regex", regexForm("Words", `[a-z]{0,1000}x`, e.agent.ID), "trigger.pattern",
				[]string{"compiles to 2003 instructions", "at most 2000 are allowed"}},
			{"empty title", regexForm("", "x"), "title", []string{"minLength"}},
			{"no pattern", regexForm("Codes", ""), "trigger.pattern", []string{"required property"}},
			{"redaction of a semantic trigger", semantic, "allowRedaction", []string{"talk of mergers"}},
			{"bad category", with(regexForm("Codes", "x"), "categoryId", "nope"), "categoryId", []string{"must be a UUID or null"}},
			{"no values", with(regexForm("Codes", ""), "triggerType", "StringMatch", "values", "\n \n"), "trigger.values", nil},
			{"unknown agent", regexForm("Codes", "x", "00000000-0000-4000-8000-000000000000"), "usedBy", []string{"is not one of the organisation"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				p := adm.post(t, "/instructions", c.form)
				require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
				require.Contains(t, p.Body, `role="alert"`)
				require.Contains(t, p.Body, "<code>"+c.field+"</code>")
				for _, w := range c.want {
					require.Contains(t, p.Body, w)
				}
				require.Contains(t, p.Body, `value="`+html.EscapeString(c.form.Get("title"))+`"`, "the input is kept")
			})
		}
		require.Len(t, e.allInstructions(t), 1, "nothing was created")
	})
}

func TestInstructionAgentFull(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		ctx := t.Context()
		full, err := e.orgs.CreateAgent(ctx, e.org.ID, "Full", admin)
		require.NoError(t, err)
		for i := range spec.MaxInstructionsPerAgent {
			_, err := e.orgs.CreateInstruction(ctx, e.org.ID, org.InstructionCreate{AgentType: spec.AgentTypeDataProtection,
				Title: fmt.Sprintf("n%03d", i), Trigger: spec.RegexTrigger(fmt.Sprintf("n%03d", i), true),
				Action: spec.ActionBlock, Criticality: spec.CriticalityLow, UsedBy: []string{full.ID}}, admin)
			require.NoError(t, err)
		}
		key := e.apiKey(t)
		status, body := e.api(t, http.MethodPost, "/organisations/"+e.org.ID+"/instructions", key,
			`{"agentType":"DataProtection","title":"One more","trigger":{"type":"Regex","pattern":"x"},"action":"Block","criticality":"High","usedBy":["`+full.ID+`"]}`)
		require.Equal(t, http.StatusConflict, status, body)
		var problem spec.Problem
		require.NoError(t, json.Unmarshal([]byte(body), &problem))

		adm := e.browser()
		adm.signIn(t, "ada@acme.test", "/instructions/new")
		p := adm.post(t, "/instructions", regexForm("One more", "x", full.ID))
		require.Equal(t, http.StatusConflict, p.Status, p.Body)
		require.Contains(t, p.Body, html.EscapeString(problem.Detail))
		require.Contains(t, p.Body, "<code>usedBy</code>")
		require.Contains(t, p.Body, "already holds 100 instructions")
		require.Contains(t, p.Body, `value="`+full.ID+`" checked`, "the choice is kept")
		require.Len(t, e.allInstructions(t), org.MaxPageSize, "nothing was created") // 101 in all; one page of 100
		a, err := e.orgs.Agent(ctx, e.org.ID, full.ID)
		require.NoError(t, err)
		require.Equal(t, spec.MaxInstructionsPerAgent, a.InstructionCount)
		require.Contains(t, adm.get(t, "/agents").Body, "100 of 100")
	})
}

func TestInstructionEditAndDelete(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		ctx := t.Context()
		other, err := e.orgs.CreateAgent(ctx, e.org.ID, "Sales", admin)
		require.NoError(t, err)
		in := e.instruction(t, "Mergers")
		credentials := org.DataCategories()[3]
		require.Equal(t, "Credentials and secrets", credentials.Name)
		// An assessment id comes only through the API; the form shows it
		// and keeps it.
		in, err = e.orgs.UpdateInstruction(ctx, e.org.ID, in.ID, org.InstructionPatch{AssessmentID: spec.Some("as-7")}, admin)
		require.NoError(t, err)
		adm := e.browser()
		adm.signIn(t, "ada@acme.test", "/instructions")

		p := adm.get(t, "/instructions/"+in.ID+"/edit")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "<h1>Edit instruction</h1>")
		require.Contains(t, p.Body, `action="/instructions/`+in.ID+`"`)
		require.Contains(t, p.Body, `value="Mergers"`)
		require.Contains(t, p.Body, `Made from assessment <code class="mono">as-7</code>`)
		require.NotContains(t, p.Body, `name="assessmentId"`)
		require.NotContains(t, p.Body, `<select id="agentType"`, "one agent type: no choice to offer")
		require.Contains(t, p.Body, `<input type="hidden" name="agentType" value="DataProtection">`)
		require.Contains(t, p.Body, ">Project Falcon</textarea>")
		require.Contains(t, p.Body, `<option value="StringMatch" selected>`)
		require.Contains(t, p.Body, `value="`+e.agent.ID+`" checked`)

		// Saving the form unchanged writes nothing.
		same := url.Values{"title": {"Mergers"}, "agentType": {"DataProtection"}, "triggerType": {"StringMatch"},
			"values": {"Project Falcon"}, "action": {"Block"}, "criticality": {"High"}, "usedBy": {e.agent.ID}}
		p = adm.post(t, "/instructions/"+in.ID, same)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		got, err := e.orgs.Instruction(ctx, e.org.ID, in.ID)
		require.NoError(t, err)
		require.Equal(t, in, got)

		edit := url.Values{"title": {"Mergers and acquisitions"}, "agentType": {"DataProtection"}, "triggerType": {"StringMatch"},
			"values": {"Project Falcon\r\n  Project Eagle  \r\n\r\n"}, "action": {"Allow"}, "criticality": {"Low"},
			"usedBy": {other.ID}, "allowRedaction": {"true"}, "assessmentId": {"as-9"},
			"categoryId": {credentials.ID}}
		p = adm.post(t, "/instructions/"+in.ID, edit)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, "/instructions?done=updated", p.location())
		got, err = e.orgs.Instruction(ctx, e.org.ID, in.ID)
		require.NoError(t, err)
		require.Equal(t, "Mergers and acquisitions", got.Title)
		require.Equal(t, spec.StringMatchTrigger([]string{"Project Falcon", "Project Eagle"}, false), got.Trigger)
		require.Equal(t, spec.ActionAllow, got.Action)
		require.Equal(t, spec.CriticalityLow, got.Criticality)
		require.Equal(t, []string{other.ID}, got.UsedBy)
		require.True(t, got.AllowRedaction)
		require.Equal(t, "as-7", *got.AssessmentID, "the form does not change the assessment id")
		require.Equal(t, credentials.ID, *got.CategoryID)
		// The category is chosen and shown by its name.
		require.Contains(t, adm.get(t, "/instructions").Body, `<span class="tag">Credentials and secrets</span>`)
		require.Contains(t, adm.get(t, "/instructions/"+in.ID+"/edit").Body,
			`<option value="`+credentials.ID+`" selected>Credentials and secrets: `)
		agents, err := e.orgs.Agents(ctx, e.org.ID)
		require.NoError(t, err)
		counts := map[string]int{}
		for _, a := range agents {
			counts[a.ID] = a.InstructionCount
		}
		// Two agents made in one millisecond list in id order, not creation
		// order: compare by id.
		require.Equal(t, map[string]int{e.agent.ID: 0, other.ID: 1}, counts)

		// An assessment id sent by a form is ignored; an edit that breaks a rule keeps the input.
		edit.Set("assessmentId", "")
		edit.Set("triggerType", "Semantic")
		edit.Set("text", "deals")
		p = adm.post(t, "/instructions/"+in.ID, edit)
		require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
		require.Contains(t, p.Body, "<code>allowRedaction</code>")
		require.Contains(t, p.Body, `<option value="Semantic" selected>`)
		edit.Del("allowRedaction")
		p = adm.post(t, "/instructions/"+in.ID, edit)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		got, err = e.orgs.Instruction(ctx, e.org.ID, in.ID)
		require.NoError(t, err)
		require.Equal(t, spec.SemanticTrigger("deals"), got.Trigger)
		require.Equal(t, "as-7", *got.AssessmentID)

		for _, path := range []string{"/instructions/00000000-0000-4000-8000-000000000000/edit", "/instructions/nope/edit"} {
			require.Equal(t, http.StatusNotFound, adm.get(t, path).Status, path)
		}

		p = adm.post(t, "/instructions/"+in.ID+"/delete", url.Values{})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, "/instructions?done=deleted", p.location())
		require.Contains(t, adm.get(t, "/instructions?done=deleted").Body, "The instruction is deleted")
		_, err = e.orgs.Instruction(ctx, e.org.ID, in.ID)
		require.ErrorIs(t, err, spec.ErrNotFound)
		agents, err = e.orgs.Agents(ctx, e.org.ID)
		require.NoError(t, err)
		for _, a := range agents {
			require.Zero(t, a.InstructionCount, a.Name)
		}
		require.Equal(t, http.StatusNotFound, adm.post(t, "/instructions/"+in.ID+"/delete", url.Values{}).Status)
		require.Equal(t, http.StatusNotFound, adm.post(t, "/instructions/"+in.ID, same).Status)
	})
}

// TestInstructionFilters compares the list page with the API's answer to
// the same query.
func TestInstructionFilters(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		ctx := t.Context()
		sales, err := e.orgs.CreateAgent(ctx, e.org.ID, "Sales", admin)
		require.NoError(t, err)
		for i, c := range []spec.InstructionCreate{
			{Title: "Card numbers", Trigger: spec.RegexTrigger(`\d{4} \d{4}`, true), Action: spec.ActionBlock, UsedBy: []string{sales.ID}},
			{Title: "Falcon codes", Trigger: spec.RegexTrigger(`FALCON-\d+`, false), Action: spec.ActionAllow},
			{Title: "Health", Trigger: spec.SemanticTrigger("medical records of falcon staff"), Action: spec.ActionBlock, UsedBy: []string{sales.ID, e.agent.ID}},
			{Title: "Names", Trigger: spec.StringMatchTrigger([]string{"Ada", "Rex"}, true), Action: spec.ActionAllow, UsedBy: []string{e.agent.ID}},
		} {
			c.AgentType, c.Criticality = spec.AgentTypeDataProtection, []string{spec.CriticalityLow, spec.CriticalityHigh}[i%2]
			_, err := e.orgs.CreateInstruction(ctx, e.org.ID, org.InstructionCreate(c), admin)
			require.NoError(t, err)
		}
		key := e.apiKey(t)
		adm := e.browser()
		adm.signIn(t, "ada@acme.test", "/instructions")
		for _, q := range []string{
			"",
			"search=falcon",
			"search=FALCON&triggerType=Regex",
			"triggerType=StringMatch",
			"triggerType=Semantic",
			"action=Allow",
			"action=Block&agentId=" + sales.ID,
			"agentId=" + strings.ToUpper(e.agent.ID),
			"agentType=DataProtection",
			"pageSize=2",
			"pageSize=2&page=3",
			"pageSize=2&page=9",
		} {
			t.Run(q, func(t *testing.T) {
				want := e.apiList(t, key, q)
				p := adm.get(t, "/instructions?"+q)
				require.Equal(t, http.StatusOK, p.Status, p.Body)
				var ids []string
				for _, in := range want.Items {
					ids = append(ids, in.ID)
				}
				require.Equal(t, append([]string{}, ids...), listedIDs(p.Body))
				if want.TotalCount == 0 {
					require.Contains(t, p.Body, "No instruction matches.")
				} else if len(want.Items) > 0 {
					require.Contains(t, p.Body, fmt.Sprintf(" of %d instruction", want.TotalCount))
				}
			})
		}
		// A GET form sends its empty fields: they filter nothing.
		p := adm.get(t, "/instructions?search=&agentId=&triggerType=Regex&action=&agentType=&pageSize=20")
		require.Equal(t, listedIDs(adm.get(t, "/instructions?triggerType=Regex").Body), listedIDs(p.Body))
		require.Contains(t, p.Body, `<option selected>Regex</option>`, "the filter is kept")

		// Paging links keep the filters.
		p = adm.get(t, "/instructions?pageSize=2&action=Block")
		require.Contains(t, p.Body, `href="/instructions?action=Block&amp;page=2&amp;pageSize=2"`)

		// A bad filter gets the API's message.
		for _, q := range []string{"triggerType=Foo", "agentId=nope", "pageSize=500", "page=0"} {
			status, body := e.api(t, http.MethodGet, "/organisations/"+e.org.ID+"/instructions?"+q, key, "")
			require.Equal(t, http.StatusBadRequest, status, body)
			var problem spec.Problem
			require.NoError(t, json.Unmarshal([]byte(body), &problem))
			p := adm.get(t, "/instructions?"+q)
			require.Equal(t, http.StatusBadRequest, p.Status, q)
			require.Contains(t, p.Body, html.EscapeString(problem.Errors[0].Field+" "+problem.Errors[0].Message), q)
		}
	})
}

func TestInstructionCrossOriginRefused(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		in := e.instruction(t, "Mergers")
		b := e.browser()
		b.signIn(t, "ada@acme.test", "/")
		evil := []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.test"}
		for _, c := range []struct {
			path string
			form url.Values
		}{
			{"/instructions", regexForm("evil", "x", e.agent.ID)},
			{"/instructions/" + in.ID, regexForm("evil", "x")},
			{"/instructions/" + in.ID + "/delete", url.Values{}},
			{"/agents", url.Values{"name": {"evil"}}},
		} {
			p := b.do(t, http.MethodPost, c.path, c.form, evil...)
			require.Equal(t, http.StatusForbidden, p.Status, c.path)
			require.Contains(t, p.Body, "came from another site")
		}
		all := e.allInstructions(t)
		require.Equal(t, []spec.Instruction{in}, all, "a cross-origin POST changed something")
		agents, err := e.orgs.Agents(t.Context(), e.org.ID)
		require.NoError(t, err)
		require.Len(t, agents, 1)
	})
}

// TestInstructionFormSensitivity sets a Semantic trigger's sensitivity
// through the form, finds it selected when editing, keeps it off other
// trigger types, and shows the API's message for a value it does not know.
func TestInstructionFormSensitivity(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db)
		adm := e.browser()
		adm.signIn(t, "ada@acme.test", "/instructions/new")
		page := adm.get(t, "/instructions/new").Body
		require.Contains(t, page, `<option value="standard" selected>Standard: few false alarms</option>`)
		require.Contains(t, page, `<option value="high" >High: catch more, more alarms</option>`)

		form := with(regexForm("Salaries", "", e.agent.ID), "triggerType", "Semantic", "text", "salaries of employees",
			"sensitivity", "high")
		p := adm.post(t, "/instructions", form)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		in := e.instruction(t, "Salaries")
		require.Equal(t, spec.Trigger{Type: spec.TriggerSemantic, Text: "salaries of employees", Sensitivity: spec.SensitivityHigh}, in.Trigger)
		edit := adm.get(t, "/instructions/"+in.ID+"/edit").Body
		require.Contains(t, edit, `<option value="high" selected>High: catch more, more alarms</option>`)
		require.NotContains(t, edit, `<option value="standard" selected>`)

		// Back to standard.
		p = adm.post(t, "/instructions/"+in.ID, with(form, "sensitivity", "standard"))
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, spec.SensitivityStandard, e.instruction(t, "Salaries").Trigger.Sensitivity)

		// A Regex trigger takes none, whatever the hidden select sends.
		p = adm.post(t, "/instructions", with(regexForm("Codes", "FALCON", e.agent.ID), "sensitivity", "high"))
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Empty(t, e.instruction(t, "Codes").Trigger.Sensitivity)

		// An unknown value is the API's 400, next to the select.
		p = adm.post(t, "/instructions", with(form, "title", "Bad", "sensitivity", "low"))
		require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
		require.Contains(t, p.Body, "<code>trigger.sensitivity</code>")
		require.Contains(t, p.Body, `id="e-sensitivity"`)
		require.Contains(t, p.Body, `aria-describedby="h-sensitivity e-sensitivity" aria-invalid="true"`)
	})
}
