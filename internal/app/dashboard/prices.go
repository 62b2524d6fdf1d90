package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aiusage/kit/internal/app/org"
)

// priceFields are the form's price fields, in the order of the page.
var priceFields = []struct{ Name, Label string }{
	{"input", "Input"}, {"cacheRead", "Cache read"}, {"cacheWrite", "Cache write"}, {"output", "Output"},
}

type pricesData struct {
	Prices []org.Price
	Fields []struct{ Name, Label string }
	// Invalid names the field at fault, for aria-invalid.
	Invalid string
}

func (d *Dashboard) renderPrices(w http.ResponseWriter, r *http.Request, status int, p *pageData, invalid string) error {
	ps, err := d.cfg.Orgs.Prices(r.Context(), viewerOf(r).Organisation.ID)
	if err != nil {
		return err
	}
	if p.Fields == nil {
		p.Fields = map[string]string{}
	}
	p.Title, p.Nav = "Prices", "prices"
	p.Data = pricesData{Prices: ps, Fields: priceFields, Invalid: invalid}
	d.render(w, r, status, "prices", p)
	return nil
}

// prices shows the organisation's price table, and the form that sets a
// model's price.
func (d *Dashboard) prices(w http.ResponseWriter, r *http.Request) error {
	p := &pageData{}
	switch r.URL.Query().Get("done") {
	case "saved":
		p.Notice = "The price is saved. Usage is computed again with it shortly."
	case "deleted":
		p.Notice = "The price is deleted. Usage of the model is computed again with the tools' estimates."
	}
	return d.renderPrices(w, r, http.StatusOK, p, "")
}

// setPrice sets a model's price from the form. An empty price field is no
// price given; a field that is not a number is 400 naming it.
func (d *Dashboard) setPrice(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	f := r.PostForm
	p := &pageData{Fields: map[string]string{"model": strings.TrimSpace(f.Get("model"))}}
	ps := org.PriceSet{Model: p.Fields["model"]}
	targets := map[string]**float64{"input": &ps.Input, "cacheRead": &ps.CacheRead, "cacheWrite": &ps.CacheWrite, "output": &ps.Output}
	for _, fd := range priceFields {
		s := strings.TrimSpace(f.Get(fd.Name))
		p.Fields[fd.Name] = s
		if s == "" {
			continue
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			p.Error = fd.Label + " price: must be a number, such as 3 or 0.3, or empty for none."
			return d.renderPrices(w, r, http.StatusBadRequest, p, fd.Name)
		}
		*targets[fd.Name] = &x
	}
	_, err := d.cfg.Orgs.SetPrice(r.Context(), v.Organisation.ID, ps, v.User.Actor())
	var fe *org.PriceFieldError
	if errors.As(err, &fe) {
		p.Error = fieldLabel(fe.Field) + ": " + fe.Detail + "."
		return d.renderPrices(w, r, http.StatusBadRequest, p, fe.Field)
	}
	if msg, status, ok := clientMessage(err); ok {
		p.Error = msg
		return d.renderPrices(w, r, status, p, "")
	}
	if err != nil {
		return err
	}
	d.pricesChanged(r, v.Organisation.ID)
	http.Redirect(w, r, "/settings/prices?done=saved", http.StatusSeeOther)
	return nil
}

// deletePrice removes a model's price.
func (d *Dashboard) deletePrice(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	err := d.cfg.Orgs.DeletePrice(r.Context(), v.Organisation.ID, r.PostForm.Get("model"), v.User.Actor())
	if msg, status, ok := clientMessage(err); ok {
		return d.renderPrices(w, r, status, &pageData{Error: msg}, "")
	}
	if err != nil {
		return err
	}
	d.pricesChanged(r, v.Organisation.ID)
	http.Redirect(w, r, "/settings/prices?"+url.Values{"done": {"deleted"}}.Encode(), http.StatusSeeOther)
	return nil
}

// pricesChanged calls Config.PricesChanged; a failure is logged: the
// price is saved, and applies to the hours rolled up after it.
func (d *Dashboard) pricesChanged(r *http.Request, orgID string) {
	if d.cfg.PricesChanged == nil {
		return
	}
	if err := d.cfg.PricesChanged(r.Context(), orgID); err != nil && d.cfg.Logger != nil {
		d.cfg.Logger.WarnContext(r.Context(), "dashboard: usage not recomputed after a price change", "organisation", orgID, "error", err)
	}
}

// fieldLabel is the label of a price form field.
func fieldLabel(name string) string {
	if name == "model" {
		return "Model"
	}
	for _, f := range priceFields {
		if f.Name == name {
			return f.Label + " price"
		}
	}
	return name
}
