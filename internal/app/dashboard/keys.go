package dashboard

import (
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/internal/app/org"
)

type keyRow struct {
	org.APIKey
	Status    string
	CreatedBy string
	LastUsed  *org.LastUse // nil: never used
}

type keysData struct {
	Keys    []keyRow
	Created *org.CreatedKey // just created: its secret, shown once
	Setup   *ingestSetup    // for a just created Ingestion key: what to paste
	Expiry  string          // the default expiry, for the form
}

func (d *Dashboard) keysPage(r *http.Request, p *pageData) error {
	v := viewerOf(r)
	keys, err := d.cfg.Orgs.Keys(r.Context(), v.Organisation.ID)
	if err != nil {
		return err
	}
	creators, err := d.cfg.Orgs.KeyCreators(r.Context(), v.Organisation.ID)
	if err != nil {
		return err
	}
	used, err := d.cfg.Orgs.KeysLastUsed(r.Context(), v.Organisation.ID)
	if err != nil {
		return err
	}
	now := d.cfg.Now()
	data, _ := p.Data.(keysData)
	data.Expiry = org.DefaultExpiry(now).Format("2006-01-02")
	data.Keys = data.Keys[:0]
	for i := len(keys) - 1; i >= 0; i-- { // newest first
		k := keys[i]
		row := keyRow{APIKey: k, Status: k.Status(now), CreatedBy: creators[k.ID]}
		if u, ok := used[k.ID]; ok {
			row.LastUsed = &u
		}
		data.Keys = append(data.Keys, row)
	}
	p.Title, p.Nav, p.Data = "API keys", "keys", data
	return nil
}

func (d *Dashboard) apiKeys(w http.ResponseWriter, r *http.Request) error {
	p := &pageData{}
	switch r.URL.Query().Get("done") {
	case "revoked":
		p.Notice = "The key is revoked: the API refuses it from its next request on."
	}
	if err := d.keysPage(r, p); err != nil {
		return err
	}
	d.render(w, r, http.StatusOK, "apikeys", p)
	return nil
}

// createKey creates a key and shows its secret, this once.
func (d *Dashboard) createKey(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	f := r.PostForm
	c := org.KeyCreate{OrganisationID: v.Organisation.ID, Name: strings.TrimSpace(f.Get("name"))}
	p := &pageData{Fields: map[string]string{"name": f.Get("name"), "type": f.Get("type"), "expiry": f.Get("expiry"), "expires": f.Get("expires")}}
	fail := func(msg string, status int) error {
		p.Error = msg
		if err := d.keysPage(r, p); err != nil {
			return err
		}
		d.render(w, r, status, "apikeys", p)
		return nil
	}
	switch t := f.Get("type"); t {
	case "", "Ingestion":
		c.Type = org.KeyTypeIngestion
	case "API":
		c.Type = org.KeyTypeAPI
	default:
		return fail("Type must be API or Ingestion.", http.StatusBadRequest)
	}
	switch f.Get("expiry") {
	case "", "default":
	case "never":
		c.NoExpiry = true
	case "date":
		t, err := time.Parse("2006-01-02", f.Get("expires"))
		if err != nil {
			return fail("Expires must be a date such as 2027-01-31.", http.StatusBadRequest)
		}
		t = t.Add(24*time.Hour - time.Millisecond) // valid through that day, UTC
		c.ExpiresAt = &t
	default:
		return fail("Expiry must be default, date or never.", http.StatusBadRequest)
	}
	created, err := d.cfg.Orgs.CreateKey(r.Context(), c, v.User.Actor())
	if msg, status, ok := clientMessage(err); ok {
		return fail(msg, status)
	}
	if err != nil {
		return err
	}
	p.Fields = nil
	data := keysData{Created: &created}
	if created.Type == org.KeyTypeIngestion {
		if data.Setup, err = newIngestSetup(r, created.Secret); err != nil {
			return err
		}
	}
	p.Data = data
	p.Notice = "Key " + created.Name + " is created. Copy its secret now: it is shown only this once."
	if err := d.keysPage(r, p); err != nil {
		return err
	}
	d.render(w, r, http.StatusCreated, "apikeys", p)
	return nil
}

func (d *Dashboard) revokeKey(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	_, err := d.cfg.Orgs.RevokeKey(r.Context(), v.Organisation.ID, chi.URLParam(r, "keyId"), v.User.Actor())
	if msg, status, ok := clientMessage(err); ok {
		d.errorPage(w, r, status, msg)
		return nil
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/settings/api-keys?done=revoked", http.StatusSeeOther)
	return nil
}
