package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/spec"
)

// AuditSourceChecked is the audit action of a conformance check of a
// source requested in the dashboard ("Check this source").
const AuditSourceChecked = "source.conformance_checked"

// reportCSP is the Content-Security-Policy of a conformance report: it runs
// nothing, loads nothing, and only its own inline style sheet applies.
const reportCSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; sandbox"

// checkSource queues a conformance check of a REST or MCP source of the
// viewer's organisation (sources.Service.CheckConformance) and records it
// in the audit trail. A source that cannot be checked, or whose check is
// still running, comes back on the page with why.
func (d *Dashboard) checkSource(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	src, ok, err := d.sourceOf(w, r)
	if !ok {
		return err
	}
	run, err := d.cfg.Sources.CheckConformance(r.Context(), v.Organisation.ID, src.ID, v.User.Name)
	if msg, status, ok := clientMessage(err); ok {
		msg = strings.TrimSuffix(strings.TrimSuffix(msg, ": "+spec.ErrInvalid.Error()), ": "+spec.ErrConflict.Error())
		p := &pageData{Error: "The source is not checked: " + msg + "."}
		return d.renderSources(w, r, status, p)
	}
	if err != nil {
		return err
	}
	if err := d.cfg.Orgs.RecordAudit(r.Context(), v.Organisation.ID, v.User.Actor(), AuditSourceChecked, "source", src.ID, nil, run); err != nil {
		return err
	}
	http.Redirect(w, r, "/sources?done=checking&source="+url.QueryEscape(src.ID)+"#source-"+src.ID, http.StatusSeeOther)
	return nil
}

// conformanceReport serves the HTML report of a conformance check of a
// source of the viewer's organisation, as the suite wrote it; with
// ?download=1, as a file to save and send to the provider's vendor.
func (d *Dashboard) conformanceReport(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	src, ok, err := d.sourceOf(w, r)
	if !ok {
		return err
	}
	run, html, err := d.cfg.Sources.ConformanceReport(r.Context(), v.Organisation.ID, src.ID, chi.URLParam(r, "run"))
	if errors.Is(err, spec.ErrNotFound) {
		d.errorPage(w, r, http.StatusNotFound, "There is no such conformance report of "+src.Name+"; only the latest are kept.")
		return nil
	}
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Security-Policy", reportCSP)
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "private, no-store")
	if r.URL.Query().Get("download") != "" {
		name := "conformance-" + fileSafe(src.Name) + "-" + run.RequestedAt.Format("20060102-150405") + ".html"
		h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	}
	_, _ = w.Write(html) // an error means the client went away
	return nil
}

// fileSafe returns name with only letters, digits, '-' and '_', at most 60
// of them, for a file name: "source" when none is left.
func fileSafe(name string) string {
	var b strings.Builder
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteRune(c)
		case c == ' ' || c == '.':
			b.WriteByte('-')
		}
		if b.Len() >= 60 {
			break
		}
	}
	if b.Len() == 0 {
		return "source"
	}
	return b.String()
}

// checkable reports whether the conformance suite can check a source of
// transport.
func checkable(transport string) bool {
	return transport == sources.TransportREST || transport == sources.TransportMCP
}
