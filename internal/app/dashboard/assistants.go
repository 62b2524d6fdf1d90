package dashboard

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/spec"
)

// The assistants pages: the organisation's assistants as its view
// (/organisations/{id}/assistants) lists them, filtered as it filters them
// (updatedSince) and by source; and one assistant of one source.

// RecordsPerPage is how many assistants or events a page lists.
const RecordsPerPage = 25

// viewQuery is what the assistants and events lists share: the source, the
// date filter (UTC) and the position of a later page.
type viewQuery struct {
	Source, Since, Category, Next string
}

type listData struct {
	Query     viewQuery
	Filtered  bool
	Invalid   bool
	NoService bool
	NoSources bool
	Sources   []option
	First     string // the first page's URL
	Next      string // the next page's URL; "" on the last
	Paged     bool
	Rows      any
}

// viewKey is the JSON of a list's position in a next link.
type viewKey struct {
	Time time.Time `json:"t"`
	ID   string    `json:"id"`
}

func encodeKey(k sources.RecordPosition) string {
	b, _ := json.Marshal(viewKey{Time: k.Time.UTC(), ID: k.ID})
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeKey reads what encodeKey wrote, in that form only.
func decodeKey(s string) (*sources.RecordPosition, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) > 4096 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var k viewKey
	if err := dec.Decode(&k); err != nil || dec.More() || k.ID == "" || k.Time.IsZero() {
		return nil, false
	}
	key := sources.RecordPosition{Time: k.Time.UTC(), ID: k.ID}
	if encodeKey(key) != s {
		return nil, false
	}
	return &key, true
}

// listStart prepares a list page of path: it reads the query, checks the
// source and the position, and says how to go on. It returns false when it
// has answered (a bad parameter, no sources).
func (d *Dashboard) listStart(w http.ResponseWriter, r *http.Request, page, path string, p *pageData, data *listData) ([]string, *sources.RecordPosition, time.Time, bool, error) {
	q := r.URL.Query()
	data.Query = viewQuery{Source: q.Get("source"), Since: q.Get("since"), Category: q.Get("category"), Next: q.Get("next")}
	vq := data.Query
	vq.Next = ""
	data.Filtered, data.Paged = vq != viewQuery{}, data.Query.Next != ""
	filters := url.Values{}
	for k, v := range map[string]string{"source": vq.Source, "since": vq.Since, "category": vq.Category} {
		if v != "" {
			filters.Set(k, v)
		}
	}
	data.First = path
	if len(filters) > 0 {
		data.First += "?" + filters.Encode()
	}
	refuse := func(msg string) ([]string, *sources.RecordPosition, time.Time, bool, error) {
		p.Error, data.Invalid = msg, true
		d.render(w, r, http.StatusBadRequest, page, p)
		return nil, nil, time.Time{}, false, nil
	}
	since, err := parseDate("since", vq.Since, time.Time{})
	if err != nil {
		return refuse(err.Error())
	}
	var after *sources.RecordPosition
	if data.Paged {
		var ok bool
		if after, ok = decodeKey(data.Query.Next); !ok {
			return refuse("The parameter next is not a position this page gave; start again from the first page.")
		}
	}
	if d.cfg.Sources == nil {
		data.NoService = true
		d.render(w, r, http.StatusOK, page, p)
		return nil, nil, time.Time{}, false, nil
	}
	srcs, err := d.cfg.Sources.List(r.Context(), viewerOf(r).Organisation.ID)
	if err != nil {
		return nil, nil, time.Time{}, false, err
	}
	if len(srcs) == 0 {
		data.NoSources = true
		d.render(w, r, http.StatusOK, page, p)
		return nil, nil, time.Time{}, false, nil
	}
	var ids []string
	for _, s := range srcs {
		data.Sources = append(data.Sources, option{Value: s.ID, Label: s.Name})
		if vq.Source == "" || vq.Source == s.ID {
			ids = append(ids, s.ID)
		}
	}
	if len(ids) == 0 {
		return refuse("The parameter source names no source of your organisation; pick one from the list.")
	}
	return ids, after, since, true, nil
}

// nextLink is the URL of the page after last, keeping the filters.
func (data *listData) nextLink(path string, last sources.RecordPosition) string {
	v := url.Values{}
	for k, s := range map[string]string{"source": data.Query.Source, "since": data.Query.Since, "category": data.Query.Category} {
		if s != "" {
			v.Set(k, s)
		}
	}
	v.Set("next", encodeKey(last))
	return path + "?" + v.Encode()
}

type assistantRow struct {
	Link, Name, ID, Status, Visibility, Model, Owner, Updated, Source string
}

// sourceOf returns the sourceId member of a record of the view.
func sourceOf(js json.RawMessage) string {
	var s struct {
		SourceID string `json:"sourceId"`
	}
	_ = json.Unmarshal(js, &s)
	return s.SourceID
}

// assistants lists the organisation's assistants.
func (d *Dashboard) assistants(w http.ResponseWriter, r *http.Request) error {
	p := &pageData{Title: "Assistants", Nav: "assistants"}
	data := &listData{}
	p.Data = data
	ids, after, since, ok, err := d.listStart(w, r, "assistants", "/assistants", p, data)
	if !ok || err != nil {
		return err
	}
	page, err := d.cfg.Sources.OrgAssistants(r.Context(), viewerOf(r).Organisation.ID, sources.RecordList{Sources: ids,
		After: after, Since: since, Limit: RecordsPerPage})
	if msg, status, ok := clientMessage(err); ok {
		p.Error, data.Invalid = msg, true
		d.render(w, r, status, "assistants", p)
		return nil
	} else if err != nil {
		return err
	}
	names, zone := optionLabels(data.Sources), zoneOf(r)
	var rows []assistantRow
	for _, rec := range page.Items {
		var a spec.Assistant
		if err := json.Unmarshal(rec.JSON, &a); err != nil {
			return fmt.Errorf("dashboard: assistant: %w", err)
		}
		src := sourceOf(rec.JSON)
		row := assistantRow{Link: recordLink("/assistants/", a.ID, src), Name: a.Name, ID: a.ID, Status: a.Status,
			Visibility: a.Visibility, Model: a.Model, Updated: date(a.UpdatedAt, zone), Source: names[src]}
		if o := a.Owner; o != nil {
			row.Owner = o.Email
			if row.Owner == "" {
				row.Owner = o.ID
			}
		}
		rows = append(rows, row)
	}
	data.Rows = rows
	if page.HasMore && len(page.Items) > 0 {
		data.Next = data.nextLink("/assistants", page.Items[len(page.Items)-1].Position)
	}
	d.render(w, r, http.StatusOK, "assistants", p)
	return nil
}

func optionLabels(opts []option) map[string]string {
	m := make(map[string]string, len(opts))
	for _, o := range opts {
		m[o.Value] = o.Label
	}
	return m
}

// recordLink is the path of the page of record id of source, below base.
func recordLink(base, id, source string) string {
	return base + url.PathEscape(id) + "?source=" + url.QueryEscape(source)
}

type assistantView struct {
	A                            spec.Assistant
	SourceName                   string
	Parameters, Knowledge, Usage string
	ConversationsLink, OwnerLink string
}

// assistantPage shows one assistant of one source.
func (d *Dashboard) assistantPage(w http.ResponseWriter, r *http.Request) error {
	id, source, ok := recordRef(r, "assistantId")
	if !ok || d.cfg.Sources == nil {
		d.errorPage(w, r, http.StatusNotFound, "No such assistant in your organisation's sources.")
		return nil
	}
	ctx := r.Context()
	srcs, err := d.orgSources(ctx, viewerOf(r).Organisation.ID, source)
	if err != nil {
		return err
	}
	found, in, err := lookup(ctx, srcs, id, d.cfg.Sources.Store().GetAssistantRaw)
	if err != nil {
		return err
	}
	if len(found) != 1 {
		msg := fmt.Sprintf("No assistant %q in your organisation's sources. Find it in the list of assistants.", excerpt(id, 80))
		if len(found) > 1 {
			msg = "Several of your organisation's sources hold an assistant with this id; open it from the list of assistants, which names its source."
		}
		d.errorPage(w, r, http.StatusNotFound, msg)
		return nil
	}
	v := &assistantView{SourceName: in[0].Name}
	if err := json.Unmarshal(found[0], &v.A); err != nil {
		return fmt.Errorf("dashboard: assistant %q: %w", id, err)
	}
	if v.A.Parameters != nil {
		v.Parameters = indentJSON(mustJSON(v.A.Parameters))
	}
	if len(v.A.Knowledge) > 0 {
		v.Knowledge = indentJSON(mustJSON(v.A.Knowledge))
	}
	if u := v.A.Usage; u != nil {
		v.Usage = thousands(u.ConversationCount) + " conversations by " + thousands(u.UserCount) + " people"
		if !u.LastUsedAt.IsZero() {
			v.Usage += "; last used " + date(u.LastUsedAt, zoneOf(r))
		}
	}
	v.ConversationsLink = "/conversations?" + url.Values{"assistant": {v.A.ID}, "source": {in[0].ID}}.Encode()
	if o := v.A.Owner; o != nil && (o.Email != "" || o.ID != "") {
		v.OwnerLink = "/conversations?" + url.Values{"user": {cmp.Or(o.Email, o.ID)}}.Encode()
	}
	title := v.A.Name
	if title == "" {
		title = "Assistant " + excerpt(id, 60)
	}
	d.render(w, r, http.StatusOK, "assistant", &pageData{Title: excerpt(title, excerptLength), Nav: "assistants", Data: v})
	return nil
}
