package dashboard

import (
	"net/http"

	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/app/sources"
)

// usageSummary is the organisation's use over the overview's range, summed
// as the usage page sums it.
type usageSummary struct {
	Days int
	sums
}

type overviewData struct {
	Usage         *usageSummary         // nil without the sources service
	Open          []reviewapi.QueueItem // oldest first, at most 5
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
	queue, err := d.cfg.Review.QueuePage(ctx, v.Organisation.ID, reviewapi.QueueQuery{Limit: 5, ExcerptMessages: -1})
	if err != nil {
		return err
	}
	data.OpenCount = queue.Total
	data.Open = queue.Items
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
		sum := &usageSummary{Days: int(u.To.Sub(u.From).Hours()/24 + 0.5), sums: newSums()}
		for _, p := range u.Total {
			sum.add(p)
		}
		data.Usage = sum
		for _, l := range listed {
			for _, rs := range l.Resources {
				if failedLast(rs) {
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
