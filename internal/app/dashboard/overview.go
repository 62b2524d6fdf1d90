package dashboard

import (
	"math"
	"net/http"
	"strconv"

	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/spec"
)

// usageSummary is the organisation's use over the overview's range.
type usageSummary struct {
	Days             int
	Requests, Tokens int64
	Cost             string // "" when no source reported one
	CostIsLowerBound bool
	Conversations    int64
}

type overviewData struct {
	Usage         *usageSummary     // nil without the sources service
	Open          []spec.ReviewTask // oldest first, at most 5
	OpenCount     int
	Sources       int
	FailedSources []sources.Listed
	ActiveKeys    int
}

// overview is the organisation's home page: open review tasks and sources
// whose last sync failed.
func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	ctx := r.Context()
	var data overviewData
	queue, err := d.cfg.Review.Queue(ctx, v.Organisation.ID)
	if err != nil {
		return err
	}
	data.OpenCount = len(queue)
	data.Open = queue[:min(5, len(queue))]
	if d.cfg.Sources != nil {
		listed, err := d.cfg.Sources.Statuses(ctx, v.Organisation.ID)
		if err != nil {
			return err
		}
		data.Sources = len(listed)
		u, err := d.cfg.Sources.OrgUsage(ctx, v.Organisation.ID, sources.OrgUsageQuery{})
		if err != nil {
			return err
		}
		sum := &usageSummary{Days: int(u.To.Sub(u.From).Hours()/24 + 0.5)}
		var cost float64
		var costKnown, costComplete = false, true
		for _, p := range u.Total {
			sum.Requests += p.Requests
			sum.Tokens += p.InputTokens + p.OutputTokens
			sum.Conversations += p.Conversations
			if p.Cost != nil {
				cost += *p.Cost
				costKnown = true
			}
			costComplete = costComplete && p.CostComplete
		}
		if costKnown {
			sum.Cost = strconv.FormatFloat(math.Round(cost*100)/100, 'f', 2, 64)
			sum.CostIsLowerBound = !costComplete
		}
		data.Usage = sum
		for _, l := range listed {
			for _, rs := range l.Resources {
				if rs.LastError != "" && (rs.LastSuccess == nil || rs.LastErrorAt != nil && rs.LastErrorAt.After(*rs.LastSuccess)) {
					data.FailedSources = append(data.FailedSources, l)
					break
				}
			}
		}
	}
	keys, err := d.cfg.Orgs.Keys(ctx, v.Organisation.ID)
	if err != nil {
		return err
	}
	now := d.cfg.Now()
	for _, k := range keys {
		if k.Status(now) == "active" {
			data.ActiveKeys++
		}
	}
	d.render(w, r, http.StatusOK, "overview", &pageData{Title: "Overview", Nav: "overview", Data: data})
	return nil
}
