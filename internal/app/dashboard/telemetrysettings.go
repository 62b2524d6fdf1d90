package dashboard

import (
	"net/http"
)

const telemetrySettingsPath = "/settings/telemetry"

func (d *Dashboard) renderTelemetrySettings(w http.ResponseWriter, r *http.Request, status int, p *pageData) error {
	st, err := d.cfg.Orgs.TelemetrySettings(r.Context(), viewerOf(r).Organisation.ID)
	if err != nil {
		return err
	}
	p.Title, p.Nav = "Telemetry settings", "telemetry-settings"
	p.Data = st
	d.render(w, r, status, "telemetrysettings", p)
	return nil
}

// telemetrySettings shows whether the organisation stores the prompt text
// its AI tools send, and the form that changes it.
func (d *Dashboard) telemetrySettings(w http.ResponseWriter, r *http.Request) error {
	p := &pageData{}
	switch r.URL.Query().Get("done") {
	case "on":
		p.Notice = "Prompt text is stored from the next telemetry request on."
	case "off":
		p.Notice = "Prompt text is no longer stored. The conversations already stored stay."
	}
	return d.renderTelemetrySettings(w, r, http.StatusOK, p)
}

// saveTelemetrySettings turns the storing of prompt text on or off; the
// form's storePrompts is "on" or "off", anything else 400.
func (d *Dashboard) saveTelemetrySettings(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	var on bool
	switch r.PostForm.Get("storePrompts") {
	case "on":
		on = true
	case "off":
	default:
		return d.renderTelemetrySettings(w, r, http.StatusBadRequest,
			&pageData{Error: "Choose whether prompt text is stored: on or off."})
	}
	_, err := d.cfg.Orgs.SetStorePrompts(r.Context(), v.Organisation.ID, on, v.User.Actor())
	if msg, status, ok := clientMessage(err); ok {
		return d.renderTelemetrySettings(w, r, status, &pageData{Error: msg})
	}
	if err != nil {
		return err
	}
	done := "off"
	if on {
		done = "on"
	}
	http.Redirect(w, r, telemetrySettingsPath+"?done="+done, http.StatusSeeOther)
	return nil
}
