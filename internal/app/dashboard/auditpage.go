package dashboard

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
)

// auditPageSize is the number of records an audit page shows by default.
const auditPageSize = 50

// knownActions are the actions of the audit trail, for the action filter's
// suggestions; the filter takes any prefix.
var knownActions = []string{
	org.AuditOrganisationCreated, org.AuditAgentCreated,
	org.AuditKeyCreated, org.AuditKeyRevoked,
	org.AuditInstructionCreated, org.AuditInstructionUpdated, org.AuditInstructionDeleted,
	org.AuditPriceSet, org.AuditPriceDeleted, org.AuditTelemetrySettingsSet,
	people.AuditUserCreated, people.AuditUserRoleChanged, people.AuditUserDisabled,
	"review_task.decided", AuditSourceSynced,
}

// actorTypes are the actor types with what the page calls them.
var actorTypes = []struct{ Value, Label string }{
	{org.ActorUser, "user (dashboard)"},
	{org.ActorAPIKey, "API key"},
	{org.ActorAdmin, "admin (command line)"},
}

type auditRow struct {
	org.AuditRecord
	When          string // UTC, to the second
	ActorLabel    string
	Before, After string // indented JSON; "" when null
}

type auditData struct {
	Rows        []auditRow
	Actions     []string
	ActorTypes  []struct{ Value, Label string }
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
	case "", org.ActorUser, org.ActorAPIKey, org.ActorAdmin:
	default:
		return a, "The parameter actorType must be user, apiKey or admin."
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

// auditURL is /audit with the filters of q, at before.
func auditURL(q org.AuditQuery, before int64) string {
	v := url.Values{}
	for k, s := range map[string]string{"actor": q.Actor, "actorType": q.ActorType, "action": q.Action} {
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

func actorLabel(t string) string {
	for _, a := range actorTypes {
		if a.Value == t {
			return a.Label
		}
	}
	return t
}

// audit shows the organisation's audit trail, newest first.
func (d *Dashboard) audit(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	q, bad := auditQuery(r.URL.Query())
	data := auditData{Actions: knownActions, ActorTypes: actorTypes,
		Filtered: q.Actor != "" || q.ActorType != "" || q.Action != ""}
	p := &pageData{Title: "Audit trail", Nav: "audit",
		Fields: map[string]string{"actor": q.Actor, "actorType": q.ActorType, "action": q.Action}}
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
		data.Rows = append(data.Rows, auditRow{AuditRecord: rec, When: rec.At.UTC().Format("2006-01-02 15:04:05 UTC"),
			ActorLabel: actorLabel(rec.Actor.Type), Before: prettyJSON(rec.Before), After: prettyJSON(rec.After)})
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
