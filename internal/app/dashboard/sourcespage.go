package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/spec"
)

// AuditSourceSynced is the audit action of a sync started in the dashboard
// ("Sync now"), recorded with the user as actor.
const AuditSourceSynced = "source.synced"

// resourceRow is the sync status of one resource of a source.
type resourceRow struct {
	Name string
	*sources.ResourceStatus
	State string // "ok", "failed", "syncing", "notoffered" or "never"
}

// sourceRow is one source on the sources page.
type sourceRow struct {
	sources.Listed
	Resources []resourceRow // in the interface's order
	Failed    bool          // a resource's last attempt failed
	Synced    bool          // a resource synced at least once
	EveryText string        // the interval between syncs, for people
	// TransportName names the transport for people ("REST", "OpenAI usage
	// API", ...).
	TransportName string
	// Checkable: the conformance suite can check it (REST and MCP).
	Checkable bool
	// Check is its latest conformance check; nil before the first.
	Check *sources.ConformanceRun
	// CheckPending: Check is queued or running.
	CheckPending bool
}

type sourcesData struct {
	Sources []sourceRow
	// Transports are the choices of the form that adds a source.
	Transports []transportChoice
	// Configured is false when the dashboard runs without the sources
	// service.
	Configured bool
	// SyncError is the detail of the failed "Sync now", one line a cause.
	SyncError []string
	SyncedID  string // the source of SyncError
	// Pushed is the push source just added, with its secret, shown once.
	Pushed *sources.Source
	// PushURL is where its provider pushes.
	PushURL string
}

// transportChoice is a transport offered by the form that adds a source;
// URL is the address a source of it has when the form leaves URL empty ("":
// the URL is needed).
type transportChoice struct{ Value, Label, URL string }

// transports are the transports a source may use, as the form offers them.
var transports = []transportChoice{
	{sources.TransportREST, "REST (the provider's base address)", ""},
	{sources.TransportMCP, "MCP (the provider's MCP endpoint)", ""},
	{sources.TransportExport, "Scheduled export (its https address or directory)", ""},
	{sources.TransportPush, "Push (the provider sends; URL and token: optional REST address to reconcile)", ""},
	{sources.TransportOpenAI, "OpenAI usage API (an Admin key)", sources.VendorURL(sources.TransportOpenAI)},
	{sources.TransportAnthropic, "Anthropic usage API (an Admin key)", sources.VendorURL(sources.TransportAnthropic)},
}

// transportName is how a source's card names its transport.
func transportName(transport string) string {
	switch transport {
	case sources.TransportMCP:
		return "MCP"
	case sources.TransportExport:
		return "Scheduled export"
	case sources.TransportPush:
		return "Push"
	case sources.TransportOpenAI:
		return "OpenAI usage API"
	case sources.TransportAnthropic:
		return "Anthropic usage API"
	}
	return "REST"
}

// AuditSourceAdded is the audit action of a source added in the dashboard.
const AuditSourceAdded = "source.created"

// AuditSourceResumed is the audit action of a paused source resumed in the
// dashboard.
const AuditSourceResumed = "source.resumed"

// failedLast reports whether the last attempt to sync the resource failed;
// a resource the provider does not offer has not failed.
func failedLast(rs *sources.ResourceStatus) bool { return rs.Failed() }

func (d *Dashboard) renderSources(w http.ResponseWriter, r *http.Request, status int, p *pageData) error {
	data, _ := p.Data.(sourcesData)
	data.Transports = transports
	if d.cfg.Sources != nil {
		data.Configured = true
		listed, err := d.cfg.Sources.Statuses(r.Context(), viewerOf(r).Organisation.ID)
		if err != nil {
			return err
		}
		checks, err := d.cfg.Sources.LatestConformance(r.Context(), viewerOf(r).Organisation.ID)
		if err != nil {
			return err
		}
		for _, l := range listed {
			row := sourceRow{Listed: l, EveryText: every(l.Source.Every), TransportName: transportName(l.Transport),
				Checkable: checkable(l.Transport)}
			if c, ok := checks[l.ID]; ok {
				row.Check, row.CheckPending = &c, c.Pending(d.cfg.Now())
			}
			for _, name := range resourceOrder(l.Resources) {
				rs := l.Resources[name]
				rr := resourceRow{Name: name, ResourceStatus: rs, State: "ok"}
				switch {
				case rs.InProgress:
					rr.State = "syncing"
				case failedLast(rs):
					rr.State, row.Failed = "failed", true
				case rs.NotOffered:
					rr.State = "notoffered"
				case rs.LastSuccess == nil:
					rr.State = "never"
				}
				if rs.LastSuccess != nil {
					row.Synced = true
				}
				row.Resources = append(row.Resources, rr)
			}
			if p.Notice != "" && l.ID == data.SyncedID {
				p.Notice = "Source " + l.Name + " is synced; its counts below are up to date."
			}
			data.Sources = append(data.Sources, row)
		}
	}
	p.Title, p.Nav, p.Data = "Sources", "sources", data
	d.render(w, r, status, "sources", p)
	return nil
}

func (d *Dashboard) sourcesPage(w http.ResponseWriter, r *http.Request) error {
	p := &pageData{}
	q := r.URL.Query()
	switch q.Get("done") {
	case "synced":
		p.Notice = "The source is synced."
		p.Data = sourcesData{SyncedID: q.Get("source")}
	case "added":
		p.Notice = "The source is added; the scheduler syncs it within a minute, or use Sync now."
	case "resumed":
		p.Notice = "The source is resumed; the scheduler syncs it within a minute, or use Sync now."
	case "checking":
		p.Notice = "The conformance check runs in the background, usually for a minute or two; reload this page to see its report on the source's card."
	}
	return d.renderSources(w, r, http.StatusOK, p)
}

// addSource adds a source to the viewer's organisation, with the checks of
// 'aiusage admin source add', and records it in the audit trail. The token
// is never shown again, nor put back in the form after a refusal.
func (d *Dashboard) addSource(w http.ResponseWriter, r *http.Request) error {
	if d.cfg.Sources == nil {
		d.errorPage(w, r, http.StatusNotFound, "This service keeps no sources.")
		return nil
	}
	v := viewerOf(r)
	f := r.PostForm
	p := &pageData{Fields: map[string]string{"name": f.Get("name"), "transport": f.Get("transport"), "url": strings.TrimSpace(f.Get("url")),
		"every": strings.TrimSpace(f.Get("every"))}}
	n := sources.SourceCreate{Name: strings.TrimSpace(f.Get("name")), URL: p.Fields["url"], Token: f.Get("token"), Transport: f.Get("transport")}
	if n.Transport == sources.TransportPush && p.Fields["every"] == "" && n.URL != "" {
		n.Every = sources.DefaultReconcileEvery
	}
	if e := p.Fields["every"]; e != "" {
		dur, err := time.ParseDuration(e)
		if err != nil {
			p.Error = "Sync every must be a duration such as 30s, 5m or 1h."
			return d.renderSources(w, r, http.StatusBadRequest, p)
		}
		n.Every = dur
	}
	src, err := d.cfg.Sources.Add(r.Context(), v.Organisation.ID, n)
	if msg, status, ok := clientMessage(err); ok {
		p.Error = "The source is not added: " + strings.TrimSuffix(msg, ": "+spec.ErrInvalid.Error()) + "."
		if status == http.StatusConflict {
			p.Error = "The source is not added: this organisation already has a source named " + strconv.Quote(n.Name) + "."
		}
		return d.renderSources(w, r, status, p)
	}
	if err != nil {
		return err
	}
	if err := d.cfg.Orgs.RecordAudit(r.Context(), v.Organisation.ID, v.User.Actor(), AuditSourceAdded, "source", src.ID, nil, src); err != nil {
		return err
	}
	if src.Transport == sources.TransportPush {
		// The signing secret is shown this once, on this answer.
		scheme := "http"
		if httpx.IsSecure(r) {
			scheme = "https"
		}
		p := &pageData{Notice: "The push source " + src.Name + " is added. Give its provider the address and the secret below.",
			Data: sourcesData{Pushed: &src, PushURL: scheme + "://" + r.Host + sources.PushPath(src.ID)}}
		return d.renderSources(w, r, http.StatusCreated, p)
	}
	http.Redirect(w, r, "/sources?done=added", http.StatusSeeOther)
	return nil
}

// sourceOf returns the source {sourceId} of the path, of the viewer's
// organisation. When the service keeps no sources or the organisation no
// such source, it answers 404 and returns false and no error; it returns
// false and the error when the source could not be read.
func (d *Dashboard) sourceOf(w http.ResponseWriter, r *http.Request) (sources.Source, bool, error) {
	if d.cfg.Sources == nil {
		d.errorPage(w, r, http.StatusNotFound, "This service keeps no sources.")
		return sources.Source{}, false, nil
	}
	v := viewerOf(r)
	src, err := d.cfg.Sources.Get(r.Context(), v.Organisation.ID, chi.URLParam(r, "sourceId"))
	if errors.Is(err, spec.ErrNotFound) || errors.Is(err, spec.ErrInvalid) {
		d.errorPage(w, r, http.StatusNotFound, "There is no such source in "+v.Organisation.Name+".")
		return sources.Source{}, false, nil
	}
	if err != nil {
		return sources.Source{}, false, err
	}
	return src, true, nil
}

// syncSource syncs a source of the viewer's organisation now, in this
// request. A provider that fails (unreachable, refusing the token) is an
// outcome to show, not an error of the dashboard: the page comes back with
// the causes, and the source's status records the failure.
func (d *Dashboard) syncSource(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	src, ok, err := d.sourceOf(w, r)
	if !ok {
		return err
	}
	started := d.cfg.Now()
	res, syncErr := d.cfg.Sources.SyncNow(r.Context(), src.ID)
	if syncErr != nil && r.Context().Err() != nil {
		return syncErr // the client went away
	}
	outcome := map[string]any{"records": res.Records(), "durationMs": d.cfg.Now().Sub(started).Milliseconds()}
	if syncErr != nil {
		outcome["error"] = syncErr.Error()
	}
	if err := d.cfg.Orgs.RecordAudit(r.Context(), v.Organisation.ID, v.User.Actor(), AuditSourceSynced, "source", src.ID,
		nil, outcome); err != nil {
		return err
	}
	if syncErr != nil {
		p := &pageData{Error: "The sync of " + src.Name + " failed; its status below records the failure.",
			Data: sourcesData{SyncError: splitLines(syncErr.Error()), SyncedID: src.ID}}
		return d.renderSources(w, r, http.StatusOK, p)
	}
	http.Redirect(w, r, "/sources?done=synced&source="+url.QueryEscape(src.ID), http.StatusSeeOther)
	return nil
}

// resumeSource resumes a paused source of the viewer's organisation (see
// sources.Service.Resume) and records it in the audit trail.
func (d *Dashboard) resumeSource(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	before, ok, err := d.sourceOf(w, r)
	if !ok {
		return err
	}
	src, err := d.cfg.Sources.Resume(r.Context(), v.Organisation.ID, before.ID)
	if err != nil {
		return err
	}
	if before.PausedAt != nil {
		if err := d.cfg.Orgs.RecordAudit(r.Context(), v.Organisation.ID, v.User.Actor(), AuditSourceResumed, "source", src.ID,
			before, src); err != nil {
			return err
		}
	}
	http.Redirect(w, r, "/sources?done=resumed", http.StatusSeeOther)
	return nil
}

// resourceOrder returns the resources of a source in the order of the
// interface (conversations, assistants, events, usage), then any other.
func resourceOrder(m map[string]*sources.ResourceStatus) []string {
	known := []string{"conversations", "assistants", "events", "usage"}
	var out, rest []string
	for _, k := range known {
		if m[k] != nil {
			out = append(out, k)
		}
	}
	for k, v := range m {
		if v != nil && !slices.Contains(known, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// every writes a sync interval as people do: "5 min", "30 s", "1 h 30 min".
func every(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	var parts []string
	if h := d / time.Hour; h > 0 {
		parts = append(parts, strconv.FormatInt(int64(h), 10)+" h")
		d -= h * time.Hour
	}
	if m := d / time.Minute; m > 0 {
		parts = append(parts, strconv.FormatInt(int64(m), 10)+" min")
		d -= m * time.Minute
	}
	if s := d / time.Second; s > 0 || len(parts) == 0 {
		parts = append(parts, strconv.FormatInt(int64(s), 10)+" s")
	}
	return strings.Join(parts, " ")
}
