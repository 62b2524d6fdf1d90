package dashboard

import (
	"net/http"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/app/reviewapi"
)

type reviewSettingsData struct {
	Settings reviewapi.Settings
	// Timeout is the timeout in force, written for people.
	Timeout string
	Min     string
	Max     string
}

// humanDuration writes d as hours and minutes ("24h", "1h30m", "45m").
func humanDuration(d time.Duration) string {
	s := d.Round(time.Minute).String()
	s = strings.TrimSuffix(s, "0s")
	return strings.Replace(s, "h0m", "h", 1)
}

func (d *Dashboard) renderReviewSettings(w http.ResponseWriter, r *http.Request, status int, p *pageData) error {
	st, err := d.cfg.Review.Settings(r.Context(), viewerOf(r).Organisation.ID)
	if err != nil {
		return err
	}
	if p.Fields == nil {
		p.Fields = map[string]string{"timeout": "", "outcome": st.TimeoutOutcome}
		if !st.DefaultTimeout {
			p.Fields["timeout"] = humanDuration(st.ReviewTimeout)
		}
	}
	p.Title, p.Nav = "Review settings", "review-settings"
	p.Data = reviewSettingsData{Settings: st, Timeout: humanDuration(st.ReviewTimeout),
		Min: humanDuration(reviewapi.MinReviewTimeout), Max: humanDuration(reviewapi.MaxReviewTimeout)}
	d.render(w, r, status, "reviewsettings", p)
	return nil
}

// reviewSettings shows the organisation's review timeout and what the
// timeout does.
func (d *Dashboard) reviewSettings(w http.ResponseWriter, r *http.Request) error {
	p := &pageData{}
	if r.URL.Query().Get("done") == "saved" {
		p.Notice = "The review settings are saved. Tasks already waiting keep their deadline."
	}
	return d.renderReviewSettings(w, r, http.StatusOK, p)
}

// saveReviewSettings changes them; an empty timeout is the service's
// default.
func (d *Dashboard) saveReviewSettings(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	f := r.PostForm
	p := &pageData{Fields: map[string]string{"timeout": strings.TrimSpace(f.Get("timeout")), "outcome": f.Get("outcome")}}
	st := reviewapi.Settings{TimeoutOutcome: f.Get("outcome")}
	if t := p.Fields["timeout"]; t != "" {
		dur, err := time.ParseDuration(t)
		if err != nil {
			p.Error = "The timeout must be a duration such as 24h, 90m or 72h, or empty for the service's default."
			return d.renderReviewSettings(w, r, http.StatusBadRequest, p)
		}
		if dur == 0 {
			p.Error = "The timeout must be at least " + humanDuration(reviewapi.MinReviewTimeout) + "; leave it empty for the service's default."
			return d.renderReviewSettings(w, r, http.StatusBadRequest, p)
		}
		st.ReviewTimeout = dur
	}
	if st.TimeoutOutcome != reviewapi.TimeoutReject && st.TimeoutOutcome != reviewapi.TimeoutApprove {
		p.Error = "Choose what the timeout does: reject or approve."
		return d.renderReviewSettings(w, r, http.StatusBadRequest, p)
	}
	_, err := d.cfg.Review.SetSettings(r.Context(), v.Organisation.ID, st, v.User.Actor())
	if msg, status, ok := clientMessage(err); ok {
		p.Error = msg
		return d.renderReviewSettings(w, r, status, p)
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/settings/review?done=saved", http.StatusSeeOther)
	return nil
}
