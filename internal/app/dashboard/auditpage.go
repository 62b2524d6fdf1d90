package dashboard

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/sso"
	"github.com/aiusage/kit/internal/infra/ident"
)

// auditPageSize is the number of records an audit page shows by default.
const auditPageSize = 50

// knownActions are the actions of the audit trail in words, for the
// action filter and the rows; an action not listed shows as recorded.
var knownActions = []struct{ Value, Label string }{
	{org.AuditKeyCreated, "created API key"},
	{org.AuditKeyRevoked, "revoked API key"},
	{org.AuditAgentCreated, "created agent"},
	{org.AuditInstructionCreated, "created instruction"},
	{org.AuditInstructionUpdated, "changed instruction"},
	{org.AuditInstructionDeleted, "deleted instruction"},
	{people.AuditUserCreated, "added user"},
	{people.AuditUserRoleChanged, "changed user's role"},
	{people.AuditUserDisabled, "disabled user"},
	{people.AuditUserPasswordChanged, "changed own password"},
	{people.AuditUserPasswordReset, "reset user's password"},
	{people.AuditUserBreakGlass, "gave user a break-glass password"},
	{sso.AuditSettingsSet, "changed single sign-on settings"},
	{sso.AuditSettingsDeleted, "removed single sign-on settings"},
	{sso.AuditRequiredSet, "required or stopped requiring single sign-on"},
	{sso.AuditSignedIn, "signed in through the identity provider"},
	{sso.AuditRefused, "refused a single sign-on"},
	{sso.AuditSessionEnded, "ended a session: the identity provider no longer admits the user"},
	{"review_task.decided", "decided review task"},
	{"review_settings.changed", "changed review settings"},
	{AuditSourceAdded, "added source"},
	{AuditSourceSynced, "synced source"},
	{AuditSourceResumed, "resumed source"},
	{AuditSourceChecked, "checked source's conformance"},
	{org.AuditPriceSet, "set price"},
	{org.AuditPriceDeleted, "deleted price"},
	{org.AuditTelemetrySettingsSet, "changed telemetry settings"},
	{org.AuditOrganisationCreated, "created organisation"},
	{org.AuditOrganisationUpdated, "changed organisation's plan or name"},
	{org.AuditTimeZoneSet, "changed organisation's time zone"},
}

// actionWords returns action in words: as knownActions says, else as
// recorded with its dots and underscores as spaces.
func actionWords(action string) string {
	for _, a := range knownActions {
		if a.Value == action {
			return a.Label
		}
	}
	return strings.NewReplacer(".", " ", "_", " ").Replace(action)
}

// actorTypes are the actor types with what the page calls them.
var actorTypes = []struct{ Value, Label string }{
	{org.ActorUser, "user (dashboard)"},
	{org.ActorAPIKey, "API key"},
	{org.ActorAdmin, "admin (command line)"},
	{org.ActorIdP, "identity provider"},
}

// resourcePages are, by resource type, the noun for it and the page that
// shows it ("" for none; {id} is replaced by the resource's id).
var resourcePages = map[string]struct{ Noun, Page string }{
	"key":               {"API key", "/settings/api-keys"},
	"agent":             {"agent", "/agents"},
	"instruction":       {"instruction", "/instructions/{id}/edit"},
	"user":              {"user", "/settings/users"},
	"source":            {"source", "/sources"},
	"price":             {"price of", "/settings/prices"},
	"review_task":       {"review task", "/review/{id}"},
	"review_settings":   {"review settings", "/settings/review"},
	"telemetrySettings": {"telemetry settings", "/settings/telemetry"},
	"organisation":      {"organisation", "/settings/organisation"},
	"sso":               {"single sign-on settings", "/settings/sso"},
}

type auditRow struct {
	org.AuditRecord
	When       string // in the organisation's zone, to the second
	ActionText string // the action in words
	ActorLabel string // what the actor is: an email, "API key", "command line"
	// What names the resource in words ("API key crm-sync"); Link is the
	// page that shows it, "" when none does (a deleted instruction).
	What, Link string
	Changed    string // the fields an update changed, comma-separated
	// NoBefore and NoAfter say why a side is empty: "nothing (created)",
	// "nothing (deleted)", or "nothing" for an action that records one side.
	NoBefore, NoAfter string
	Before, After     string // indented JSON; "" when null
}

// auditActor is an option of the person filter.
type auditActor struct{ ID, Label string }

type auditData struct {
	Rows       []auditRow
	Actions    []struct{ Value, Label string }
	ActorTypes []struct{ Value, Label string }
	People     []auditActor // the organisation's users, for the person filter
	Keys       []auditActor // and its API keys
	// OtherAction is the action filter when it is none of Actions (a
	// prefix such as "key."), for an option of its own.
	OtherAction string
	Filtered    bool
	NewestURL   string // the first page with the same filters; "" on it
	OlderURL    string // the next page; "" on the last
	Invalid     bool   // a parameter was bad: no rows were read
	FirstRecord bool   // the page starts at the newest record
}

// auditQuery reads the query of GET /audit; a bad parameter is named in
// the message.
func auditQuery(q url.Values) (org.AuditQuery, string) {
	a := org.AuditQuery{Actor: strings.TrimSpace(q.Get("actor")), ActorType: q.Get("actorType"),
		Action: strings.TrimSpace(q.Get("action")), Limit: auditPageSize}
	if !utf8.ValidString(a.Actor) || utf8.RuneCountInString(a.Actor) > 200 {
		return a, "The parameter actor must be at most 200 characters of text."
	}
	if !utf8.ValidString(a.Action) || utf8.RuneCountInString(a.Action) > 100 {
		return a, "The parameter action must be at most 100 characters of text."
	}
	switch a.ActorType {
	case "", org.ActorUser, org.ActorAPIKey, org.ActorAdmin, org.ActorIdP:
	default:
		return a, "The parameter actorType must be user, apiKey, admin or identityProvider."
	}
	if s := q.Get("actorId"); s != "" {
		id, ok := ident.CanonicalUUID(s)
		if !ok {
			return a, "The parameter actorId must be the id of a person or an API key (a UUID)."
		}
		a.ActorID = id
	}
	for _, d := range []struct {
		name string
		to   *time.Time
		add  int // days: "to" names the last day included
	}{{"from", &a.From, 0}, {"to", &a.To, 1}} {
		if s := q.Get(d.name); s != "" {
			t, err := time.Parse(dateLayout, s)
			if err != nil {
				return a, "The parameter " + d.name + " must be a date such as 2026-03-01 (a day in UTC)."
			}
			*d.to = t.AddDate(0, 0, d.add)
		}
	}
	if !a.From.IsZero() && !a.To.IsZero() && !a.From.Before(a.To) {
		return a, "The parameter to must be the day of from or later."
	}
	if s := q.Get("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return a, "The parameter before must be a whole number above 0 (the seq of a record)."
		}
		a.Before = n
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 200 {
			return a, "The parameter limit must be a whole number from 1 to 200."
		}
		a.Limit = n
	}
	return a, ""
}

// auditFields are the filters of q as the form's fields hold them.
func auditFields(q org.AuditQuery) map[string]string {
	f := map[string]string{"actor": q.Actor, "actorType": q.ActorType, "action": q.Action, "actorId": q.ActorID}
	if !q.From.IsZero() {
		f["from"] = q.From.Format(dateLayout)
	}
	if !q.To.IsZero() {
		f["to"] = q.To.AddDate(0, 0, -1).Format(dateLayout)
	}
	return f
}

// auditURL is /audit with the filters of q, at before.
func auditURL(q org.AuditQuery, before int64) string {
	v := url.Values{}
	for k, s := range auditFields(q) {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Limit != auditPageSize {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if before > 0 {
		v.Set("before", strconv.FormatInt(before, 10))
	}
	if len(v) == 0 {
		return "/audit"
	}
	return "/audit?" + v.Encode()
}

func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// fieldsOf decodes a record's before or after into its top-level fields;
// nil for null or anything that is not an object.
func fieldsOf(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// resourceName is the resource's own name in its fields: its name, title,
// model or email, whichever it has first.
func resourceName(fields map[string]json.RawMessage) string {
	for _, k := range []string{"name", "title", "model", "email"} {
		var s string
		if json.Unmarshal(fields[k], &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// changedFields lists, in order, the top-level fields whose values differ
// between before and after (both objects), but the update times.
func changedFields(before, after map[string]json.RawMessage) string {
	if before == nil || after == nil {
		return ""
	}
	var out []string
	for k := range after {
		if k != "updatedAt" && !bytes.Equal(before[k], after[k]) {
			out = append(out, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// auditNames are what the audit page knows of the organisation's people
// and things: users by id, and the names of users, keys, agents and
// sources by id, for records that do not carry the name themselves.
type auditNames struct {
	users map[string]people.User
	names map[string]string
}

// describe fills the row's words: the action, the actor, and the resource
// with a link to its page.
func describe(rec org.AuditRecord, known auditNames, zone *time.Location) auditRow {
	users := known.users
	row := auditRow{AuditRecord: rec, When: dateSecond(rec.At.Time, zone),
		ActionText: actionWords(rec.Action), Before: prettyJSON(rec.Before), After: prettyJSON(rec.After)}
	switch rec.Actor.Type {
	case org.ActorUser:
		row.ActorLabel = "dashboard"
		if u, ok := users[rec.Actor.ID]; ok {
			row.ActorLabel = u.Email
		}
	case org.ActorAPIKey:
		row.ActorLabel = "API key"
	case org.ActorAdmin:
		row.ActorLabel = "command line"
	case org.ActorIdP:
		row.ActorLabel = "identity provider"
	default:
		row.ActorLabel = rec.Actor.Type
	}
	row.NoBefore, row.NoAfter = "nothing", "nothing"
	if strings.HasSuffix(rec.Action, ".created") {
		row.NoBefore = "nothing (created)"
	}
	if strings.HasSuffix(rec.Action, ".deleted") {
		row.NoAfter = "nothing (deleted)"
	}
	before, after := fieldsOf(rec.Before), fieldsOf(rec.After)
	row.Changed = changedFields(before, after)
	name := resourceName(after)
	if name == "" {
		name = resourceName(before)
	}
	if name == "" {
		name = known.names[rec.ResourceID]
	}
	page, listed := resourcePages[rec.ResourceType]
	noun := page.Noun
	if !listed {
		noun = strings.ReplaceAll(rec.ResourceType, "_", " ")
	}
	row.What = strings.TrimSpace(noun + " " + name)
	if rec.ResourceType == "user" && name != "" {
		if u, ok := users[rec.ResourceID]; ok && u.Email != name {
			row.What += " (" + u.Email + ")"
		}
	}
	// A deleted instruction has no page any more.
	if page.Page != "" && (rec.ResourceType != "instruction" || after != nil) {
		row.Link = strings.ReplaceAll(page.Page, "{id}", url.PathEscape(rec.ResourceID))
	}
	return row
}

// auditChoices fills the person filter's options, the organisation's users
// and API keys, and returns the names the rows need.
func (d *Dashboard) auditChoices(r *http.Request, data *auditData) (auditNames, error) {
	ctx, orgID := r.Context(), viewerOf(r).Organisation.ID
	known := auditNames{users: map[string]people.User{}, names: map[string]string{}}
	users, err := d.cfg.People.Users(ctx, orgID)
	if err != nil {
		return known, err
	}
	for _, u := range users {
		known.users[u.ID], known.names[u.ID] = u, u.Name
		data.People = append(data.People, auditActor{u.ID, u.Name + " (" + u.Email + ")"})
	}
	keys, err := d.cfg.Orgs.Keys(ctx, orgID)
	if err != nil {
		return known, err
	}
	for _, k := range keys {
		known.names[k.ID] = k.Name
		data.Keys = append(data.Keys, auditActor{k.ID, k.Name + " (" + string(k.Type) + " key …" + k.Last4 + ")"})
	}
	agents, err := d.cfg.Orgs.Agents(ctx, orgID)
	if err != nil {
		return known, err
	}
	for _, a := range agents {
		known.names[a.ID] = a.Name
	}
	if d.cfg.Sources != nil {
		srcs, err := d.cfg.Sources.List(ctx, orgID)
		if err != nil {
			return known, err
		}
		for _, s := range srcs {
			known.names[s.ID] = s.Name
		}
	}
	return known, nil
}

// audit shows the organisation's audit trail, newest first.
func (d *Dashboard) audit(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	q, bad := auditQuery(r.URL.Query())
	data := auditData{Actions: knownActions, ActorTypes: actorTypes,
		Filtered: q.Actor != "" || q.ActorType != "" || q.Action != "" || q.ActorID != "" || !q.From.IsZero() || !q.To.IsZero()}
	if q.Action != "" && actionWords(q.Action) == strings.NewReplacer(".", " ", "_", " ").Replace(q.Action) {
		data.OtherAction = q.Action
	}
	known, err := d.auditChoices(r, &data)
	if err != nil {
		return err
	}
	p := &pageData{Title: "Audit trail", Nav: "audit", Fields: auditFields(q)}
	if bad != "" {
		data.Invalid = true
		p.Error, p.Data = bad, data
		d.render(w, r, http.StatusBadRequest, "audit", p)
		return nil
	}
	recs, next, err := d.cfg.Orgs.AuditPage(r.Context(), v.Organisation.ID, q)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		data.Rows = append(data.Rows, describe(rec, known, v.Zone))
	}
	if q.Before > 0 {
		data.NewestURL = auditURL(q, 0)
	}
	if next > 0 {
		data.OlderURL = auditURL(q, next)
	}
	data.FirstRecord = q.Before == 0
	p.Data = data
	d.render(w, r, http.StatusOK, "audit", p)
	return nil
}
