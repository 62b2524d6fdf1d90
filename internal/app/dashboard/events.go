package dashboard

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/spec"
)

// The events pages: the organisation's events as its view
// (/organisations/{id}/events) lists them, filtered as it filters them
// (occurredAfter, category) and by source; and one event. Events have no
// single-record read in the interface, so an event's link carries its
// source and time (at), and its page reads the source's list at that time.

// atLayout is the time of an event's link: RFC 3339 with milliseconds.
const atLayout = "2006-01-02T15:04:05.000Z07:00"

type eventsData struct {
	listData
	Categories []string
}

type eventRow struct {
	Link, When, Type, Category, Action, Actor, Target, Source string
}

// events lists the organisation's events.
func (d *Dashboard) events(w http.ResponseWriter, r *http.Request) error {
	p := &pageData{Title: "Events", Nav: "events"}
	data := &eventsData{Categories: spec.EventCategories}
	p.Data = data
	if c := r.URL.Query().Get("category"); c != "" && !slices.Contains(spec.EventCategories, c) {
		data.Query.Category = c
		p.Error, data.Invalid = "The parameter category must be one of "+strings.Join(spec.EventCategories, ", ")+".", true
		d.render(w, r, http.StatusBadRequest, "events", p)
		return nil
	}
	ids, after, since, ok, err := d.listStart(w, r, "events", "/events", p, &data.listData)
	if !ok || err != nil {
		return err
	}
	q := sources.RecordList{Sources: ids, After: after, Category: data.Query.Category, Limit: RecordsPerPage}
	if !since.IsZero() {
		q.Since = since.Add(-time.Millisecond) // the day is included
	}
	page, err := d.cfg.Sources.OrgEvents(r.Context(), viewerOf(r).Organisation.ID, q)
	if msg, status, ok := clientMessage(err); ok {
		p.Error, data.Invalid = msg, true
		d.render(w, r, status, "events", p)
		return nil
	} else if err != nil {
		return err
	}
	names, zone := optionLabels(data.Sources), zoneOf(r)
	var rows []eventRow
	for _, rec := range page.Items {
		var e spec.Event
		if err := json.Unmarshal(rec.JSON, &e); err != nil {
			return fmt.Errorf("dashboard: event: %w", err)
		}
		src := sourceOf(rec.JSON)
		row := eventRow{Link: eventLink(&e, src), When: date(e.OccurredAt, zone), Type: e.Type, Category: e.Category,
			Action: e.Action, Source: names[src]}
		if a := e.Actor; a != nil {
			row.Actor = cmp.Or(a.Email, a.ID, a.Type)
		}
		if t := e.Target; t != nil {
			row.Target = strings.TrimSpace(t.Kind + " " + cmp.Or(t.Name, t.ID))
		}
		rows = append(rows, row)
	}
	data.Rows = rows
	if page.HasMore && len(page.Items) > 0 {
		data.Next = data.nextLink("/events", page.Items[len(page.Items)-1].Position)
	}
	d.render(w, r, http.StatusOK, "events", p)
	return nil
}

// eventLink is the path of the page of event e of source.
func eventLink(e *spec.Event, source string) string {
	return "/events/" + url.PathEscape(e.ID) + "?" + url.Values{"source": {source},
		"at": {e.OccurredAt.UTC().Format(atLayout)}}.Encode()
}

type eventView struct {
	E                                   spec.Event
	SourceName, SourceID                string
	Payload                             string
	ActorLink, TargetLink, SameTypeLink string
}

// eventPage shows one event: the one with the id of the path among the
// events of the source at the time of the link.
func (d *Dashboard) eventPage(w http.ResponseWriter, r *http.Request) error {
	notFound := func() error {
		d.errorPage(w, r, http.StatusNotFound, "No such event in your organisation's sources. Open events from the list of events.")
		return nil
	}
	id, source, ok := recordRef(r, "eventId")
	at, err := time.Parse(time.RFC3339Nano, r.URL.Query().Get("at"))
	if !ok || source == "" || err != nil || d.cfg.Sources == nil {
		return notFound()
	}
	srcs, err := d.orgSources(r.Context(), viewerOf(r).Organisation.ID, source)
	if err != nil {
		return err
	}
	if len(srcs) == 0 {
		return notFound()
	}
	found, err := d.cfg.Sources.OrgEvent(r.Context(), viewerOf(r).Organisation.ID, source, id, at)
	if errors.Is(err, spec.ErrNotFound) {
		return notFound()
	} else if err != nil {
		return err
	}
	v := &eventView{SourceName: srcs[0].Name, SourceID: srcs[0].ID}
	if err := json.Unmarshal(found, &v.E); err != nil {
		return fmt.Errorf("dashboard: event %q: %w", id, err)
	}
	v.Payload = indentJSON(v.E.Payload)
	if a := v.E.Actor; a != nil && a.Email != "" {
		v.ActorLink = "/conversations?" + url.Values{"user": {a.Email}}.Encode()
	}
	if t := v.E.Target; t != nil && t.ID != "" {
		switch t.Kind {
		case "assistant":
			v.TargetLink = recordLink("/assistants/", t.ID, v.SourceID)
		case "conversation":
			v.TargetLink = conversationLink(t.ID, v.SourceID)
		}
	}
	if c := v.E.Category; slices.Contains(spec.EventCategories, c) {
		v.SameTypeLink = "/events?" + url.Values{"category": {c}, "source": {v.SourceID}}.Encode()
	}
	title := cmp.Or(v.E.Type, "Event "+excerpt(id, 60))
	d.render(w, r, http.StatusOK, "event", &pageData{Title: excerpt(title, excerptLength), Nav: "events", Data: v})
	return nil
}
