package dashboard

import (
	"net/http"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/reviewapi"
)

// The Settings area: an index of the settings pages, and the organisation's
// own settings (its name, time zone, plan and hourly limit).

const (
	settingsPath    = "/settings"
	orgSettingsPath = "/settings/organisation"
)

// settingsEntry is one page the Settings index lists.
type settingsEntry struct {
	Path, Title, About string
	AdminOnly          bool
}

// settingsEntries are the Settings area's pages, in the order the index
// lists them.
var settingsEntries = []settingsEntry{
	{"/settings/api-keys", "API keys", "Create and revoke the keys that programs use for the organisation and review-task APIs, and the telemetry (Ingestion) keys.", true},
	{"/settings/users", "Users", "Invite people as Administrators or Reviewers, change their role, disable them, reset their password.", true},
	{"/settings/review", "Review", "How long a review task waits for a person before it is rejected.", true},
	{"/settings/prices", "Prices", "Prices per model, to compute costs from tokens where a source reports none.", true},
	{telemetrySettingsPath, "Telemetry", "Whether prompt text that AI tools send with their telemetry is stored.", true},
	{ssoSettingsPath, "Single sign-on", "Sign the organisation's people in through its identity provider (OpenID Connect), with the roles it gives them; require it.", true},
	{orgSettingsPath, "Organisation", "The organisation's name, the time zone pages show times in, its plan and how much of this hour's requests it has used.", true},
	{passwordPath, "Your password", "Change the password you sign in with.", false},
}

type settingsIndexData struct {
	Entries []settingsEntry
	Hidden  int // entries left out: only Administrators may open them
}

// settingsIndex lists the settings pages the viewer may open; a Reviewer is
// told that the rest are the Administrators'.
func (d *Dashboard) settingsIndex(w http.ResponseWriter, r *http.Request) error {
	p := &pageData{Title: "Settings", Nav: "settings"}
	p.Viewer = viewerOf(r)
	var data settingsIndexData
	for _, e := range settingsEntries {
		if e.AdminOnly && !p.IsAdmin() {
			data.Hidden++
			continue
		}
		data.Entries = append(data.Entries, e)
	}
	p.Data = data
	d.render(w, r, http.StatusOK, "settings", p)
	return nil
}

type orgSettingsData struct {
	Organisation org.Organisation
	Settings     org.OrgSettings
	Hour         reviewapi.HourUsage
	Zones        []string // suggestions for the time zone field
	TimeZone     string   // the field's value: the zone, or what was refused
	Now          time.Time
}

// PlanName is the plan as the page names it.
func (o orgSettingsData) PlanName() string {
	p := string(o.Organisation.Plan)
	if p == "" {
		return ""
	}
	return strings.ToUpper(p[:1]) + p[1:]
}

// Share is the part of the hourly limit used, in whole percent (0 to 100),
// for the meter.
func (o orgSettingsData) Share() int {
	if o.Hour.Limit <= 0 {
		return 0
	}
	return min(100, o.Hour.Used*100/o.Hour.Limit)
}

// ResetMinutes is how long until the oldest request counted leaves the
// hour, in whole minutes rounded up.
func (o orgSettingsData) ResetMinutes() int {
	return int((o.Hour.Reset + time.Minute - 1) / time.Minute)
}

// commonZones are the time zones the form suggests; any IANA name is
// accepted.
var commonZones = []string{
	"UTC", "Europe/London", "Europe/Dublin", "Europe/Lisbon", "Europe/Paris", "Europe/Berlin", "Europe/Amsterdam",
	"Europe/Zurich", "Europe/Vienna", "Europe/Madrid", "Europe/Rome", "Europe/Stockholm", "Europe/Warsaw",
	"Europe/Helsinki", "Europe/Athens", "Europe/Istanbul", "Africa/Johannesburg", "Asia/Dubai", "Asia/Kolkata",
	"Asia/Singapore", "Asia/Shanghai", "Asia/Tokyo", "Asia/Seoul", "Australia/Sydney", "Pacific/Auckland",
	"America/Sao_Paulo", "America/New_York", "America/Toronto", "America/Chicago", "America/Denver",
	"America/Los_Angeles",
}

func (d *Dashboard) renderOrgSettings(w http.ResponseWriter, r *http.Request, status int, p *pageData, field string) error {
	v := viewerOf(r)
	ctx := r.Context()
	st, err := d.cfg.Orgs.OrgSettings(ctx, v.Organisation.ID)
	if err != nil {
		return err
	}
	hour, err := d.cfg.Review.HourUsage(ctx, v.Organisation.ID)
	if err != nil {
		return err
	}
	if field == "" {
		field = st.TimeZone
	}
	p.Title, p.Nav = "Organisation", "org-settings"
	p.Data = orgSettingsData{Organisation: v.Organisation, Settings: st, Hour: hour, Zones: commonZones, TimeZone: field, Now: d.cfg.Now()}
	d.render(w, r, status, "orgsettings", p)
	return nil
}

// orgSettings shows the organisation's name, time zone, plan and its use of
// the hour.
func (d *Dashboard) orgSettings(w http.ResponseWriter, r *http.Request) error {
	p := &pageData{}
	if r.URL.Query().Get("done") == "zone" {
		p.Notice = "Time zone saved: pages show times in it from now on."
	}
	return d.renderOrgSettings(w, r, http.StatusOK, p, "")
}

// saveOrgSettings sets the organisation's time zone from the form's
// timeZone, an IANA zone name; another is 400 naming it.
func (d *Dashboard) saveOrgSettings(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	name := strings.TrimSpace(r.PostForm.Get("timeZone"))
	_, err := d.cfg.Orgs.SetTimeZone(r.Context(), v.Organisation.ID, name, v.User.Actor())
	if msg, status, ok := clientMessage(err); ok {
		if name == "" {
			msg = "Enter a time zone: an IANA name such as UTC or Europe/Berlin."
		}
		return d.renderOrgSettings(w, r, status, &pageData{Error: msg}, name)
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, orgSettingsPath+"?done=zone", http.StatusSeeOther)
	return nil
}
