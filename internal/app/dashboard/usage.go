package dashboard

import (
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/spec"
)

// The usage page: the organisation's AI use over time, summed over its
// sources, drawn as charts with their numbers in tables.

const (
	dateLayout = "2006-01-02"
	// topGroups is how many sources, models or users a chart shows apart;
	// the rest add up as "Other".
	topGroups = 5
	// Default ranges, ending today (UTC) included.
	defaultDays      = 30
	defaultHourDays  = 2
	metricRequests   = "requests"
	metricTokens     = "tokens"
	metricCost       = "cost"
	defaultUsageMetr = metricTokens
	// The longest ranges a usage series covers (those of the provider
	// interface, provider.MaxDailyRange and MaxHourlyRange).
	maxDailyRange  = 366 * 24 * time.Hour
	maxHourlyRange = 31 * 24 * time.Hour
)

var metricNames = map[string]string{metricRequests: "Requests", metricTokens: "Tokens (input + output)", metricCost: "Cost (" + costCurrency + ")"}

// usageQuery is the usage page's query, as the form shows it.
type usageQuery struct {
	From, To    string // dates, YYYY-MM-DD, both included
	Granularity string
	Metric      string
	User        string // the Person filter as given, trimmed; "" for everyone
}

// cost is a sum of costs: nil when no bucket reported one; Complete when
// every bucket did. Estimated is the part of Sum that is AI tools' own
// estimates (a telemetry source's cost where the organisation has no price
// for the model), 0 when none is. Daily is the part of Sum that vendors
// report per day and project, not per person or hour (the OpenAI and
// Anthropic sources' costs), 0 when none is.
type cost struct {
	Sum       *float64
	Complete  bool
	Estimated float64
	Daily     float64
}

func (c *cost) add(v *float64, complete bool, estimated, daily *float64) {
	if estimated != nil {
		c.Estimated = roundCost(c.Estimated + *estimated)
	}
	if daily != nil {
		c.Daily = roundCost(c.Daily + *daily)
	}
	if v == nil {
		c.Complete = false
		return
	}
	if c.Sum == nil {
		c.Sum, c.Complete = new(float64), complete
	} else {
		c.Complete = c.Complete && complete
	}
	*c.Sum = roundCost(*c.Sum + *v)
}

// String is the cost as the tables show it: "—" when not reported, "≥ x"
// when some bucket did not report one.
func (c cost) String() string {
	switch {
	case c.Sum == nil:
		return "—"
	case !c.Complete:
		return "≥ " + money(*c.Sum)
	}
	return money(*c.Sum)
}

// allEstimated says whether the whole of the cost is the tools' estimate.
func (c cost) allEstimated() bool { return c.Estimated > 0 && c.Sum != nil && c.Estimated >= *c.Sum }

// Mark labels the parts of a cost in a table's cell: "estimate" when all of
// it is the tools' estimate, "est. x" for the part that is; "per day and
// project" when all of it is vendors' costs per day and project, "per day
// x" for the part that is; both joined by "; ", "" when neither is.
func (c cost) Mark() string {
	var marks []string
	switch {
	case !(c.Estimated > 0):
	case c.allEstimated():
		marks = append(marks, "estimate")
	default:
		marks = append(marks, "est. "+money(c.Estimated))
	}
	switch {
	case !(c.Daily > 0):
	case c.Sum != nil && c.Daily >= *c.Sum:
		marks = append(marks, "per day and project")
	default:
		marks = append(marks, "per day "+money(c.Daily))
	}
	return strings.Join(marks, "; ")
}

// DailyNote says, in a sentence, which part of the cost vendors report per
// day and project rather than per person (the OpenAI and Anthropic
// sources' costs, which are not spread over persons or hours); "" when
// none is.
func (c cost) DailyNote() string {
	if !(c.Daily > 0) {
		return ""
	}
	return "of which per day and project, not per person (OpenAI, Anthropic costs): " + money(c.Daily)
}

// Note says, in a sentence, which part of the cost is an estimate; "" when
// none is.
func (c cost) Note() string {
	switch {
	case !(c.Estimated > 0):
		return ""
	case c.allEstimated():
		return "all of it estimated by the AI tools themselves"
	}
	return "of which estimated by the AI tools themselves: " + money(c.Estimated)
}

// roundCost rounds a summed cost to 12 significant digits, as the provider
// interface does (provider.RoundCost): 0.1+0.2 is 0.3.
func roundCost(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	return r
}

// costCurrency is the currency of every cost the dashboard shows: the AI
// usage data interface's cost is a bare number, and the kit's sources all
// report US dollars (the vendors' cost APIs, the AI tools' telemetry, the
// organisation's prices).
const costCurrency = "USD"

// money writes an amount with its currency and cents, "USD 1,234.50".
func money(v float64) string {
	return costCurrency + " " + amount(v)
}

// amount writes v with a comma between groups of three digits and cents.
func amount(v float64) string {
	whole := int64(v)
	frac := fmt.Sprintf("%.2f", v-float64(whole))
	if frac == "1.00" {
		whole, frac = whole+1, "0.00"
	}
	return thousands(whole) + frac[1:]
}

// sums are the metrics of a slot or a group.
type sums struct {
	Requests, Input, Output int64
	Cost                    cost
}

func newSums() sums { return sums{Cost: cost{Complete: true}} }

func (s *sums) add(p sqlstore.UsagePoint) {
	s.Requests += p.Requests
	s.Input += p.InputTokens
	s.Output += p.OutputTokens
	s.Cost.add(p.Cost, p.CostComplete, p.EstimatedCost, p.DailyCost)
}

func (s *sums) merge(o sums) {
	s.Requests += o.Requests
	s.Input += o.Input
	s.Output += o.Output
	s.Cost.add(o.Cost.Sum, o.Cost.Complete, &o.Cost.Estimated, &o.Cost.Daily)
}

// Tokens is input plus output.
func (s sums) Tokens() int64 { return s.Input + s.Output }

func (s sums) metric(m string) float64 {
	switch m {
	case metricRequests:
		return float64(s.Requests)
	case metricCost:
		if s.Cost.Sum == nil {
			return 0
		}
		return *s.Cost.Sum
	}
	return float64(s.Tokens())
}

// The metrics as the tables show them.
func (s sums) FmtRequests() string { return thousands(s.Requests) }
func (s sums) FmtInput() string    { return thousands(s.Input) }
func (s sums) FmtOutput() string   { return thousands(s.Output) }
func (s sums) FmtTokens() string   { return thousands(s.Tokens()) }

type slotRow struct {
	Label string
	sums
}

type groupRow struct {
	Name   string
	Href   string // the usage page kept to this group (per user), if any
	Swatch template.HTML
	Folded bool // drawn as part of "Other"
	Share  string
	sums
}

type matrixRow struct {
	Label  string
	Values []string
	Total  string
}

type groupChart struct {
	ID, Title, Dimension string
	SVG                  template.HTML
	Legend               []groupRow // the series drawn, bottom up
	Rows                 []groupRow // every group, largest first
	Total                sums
	Head                 []string // the matrix's columns: the series drawn
	Matrix               []matrixRow
}

type usageData struct {
	Query       usageQuery
	NoService   bool // the service has no sources configured
	NoSources   bool // the organisation has no source
	Empty       bool // no usage in the range
	Invalid     bool // the query was refused: no data drawn
	Range       string
	SlotName    string // "day" or "hour"
	MetricName  string
	Sources     int
	Total       sums
	OverTime    template.HTML
	OverTimeRow []slotRow
	Groups      []groupChart
	// Person is the Person filter resolved: nil for everyone.
	Person *person
	// Suggest are the Person field's suggestions; Everyone the page
	// without the Person filter.
	Suggest  []suggestion
	Everyone string
}

// Currency is the currency of the page's costs.
func (usageData) Currency() string { return costCurrency }

// parseUsageQuery reads the query of r; an error names the parameter.
func (d *Dashboard) parseUsageQuery(r *http.Request) (usageQuery, time.Time, time.Time, error) {
	q := r.URL.Query()
	uq := usageQuery{From: q.Get("from"), To: q.Get("to"), Granularity: q.Get("granularity"), Metric: q.Get("metric")}
	user, err := parsePerson(q.Get("user"))
	if err != nil {
		return uq, time.Time{}, time.Time{}, err
	}
	uq.User = user
	switch uq.Granularity {
	case "":
		uq.Granularity = spec.GranularityDay
	case spec.GranularityDay, spec.GranularityHour:
	default:
		return uq, time.Time{}, time.Time{}, badParamf("The parameter granularity must be day or hour.")
	}
	switch uq.Metric {
	case "":
		uq.Metric = defaultUsageMetr
	case metricRequests, metricTokens, metricCost:
	default:
		return uq, time.Time{}, time.Time{}, badParamf("The parameter metric must be requests, tokens or cost.")
	}
	today := d.cfg.Now().UTC().Truncate(24 * time.Hour)
	to, err := parseDate("to", uq.To, today)
	if err != nil {
		return uq, time.Time{}, time.Time{}, err
	}
	days := defaultDays
	if uq.Granularity == spec.GranularityHour {
		days = defaultHourDays
	}
	from, err := parseDate("from", uq.From, to.AddDate(0, 0, 1-days))
	if err != nil {
		return uq, time.Time{}, time.Time{}, err
	}
	end := to.Add(24 * time.Hour) // to is included
	limit, unit := maxDailyRange, "366 days"
	if uq.Granularity == spec.GranularityHour {
		limit, unit = maxHourlyRange, "31 days by hour"
	}
	switch {
	case from.After(to):
		return uq, time.Time{}, time.Time{}, badParamf("The parameter to (%s) is before from (%s).", to.Format(dateLayout), from.Format(dateLayout))
	case end.Sub(from) > limit:
		return uq, time.Time{}, time.Time{}, badParamf("The parameters from and to span more than %s; narrow the range.", unit)
	}
	uq.From, uq.To = from.Format(dateLayout), to.Format(dateLayout)
	return uq, from, end, nil
}

// badParam is a refused query parameter, as the page tells it.
type badParam struct{ msg string }

func (e badParam) Error() string { return e.msg }

func badParamf(format string, args ...any) error { return badParam{fmt.Sprintf(format, args...)} }

// parseDate reads a date YYYY-MM-DD (UTC); "" is def.
func parseDate(name, v string, def time.Time) (time.Time, error) {
	if v == "" {
		return def, nil
	}
	t, err := time.Parse(dateLayout, v)
	if err != nil || t.Year() < 1970 || t.Year() > 9999 {
		return time.Time{}, badParamf("The parameter %s must be a date of the form YYYY-MM-DD, like 2025-01-31.", name)
	}
	return t, nil
}

// usage shows the organisation's usage over time: in total, per source, per
// model and per user.
func (d *Dashboard) usage(w http.ResponseWriter, r *http.Request) error {
	p := &pageData{Title: "Usage", Nav: "usage"}
	uq, from, to, err := d.parseUsageQuery(r)
	data := usageData{Query: uq, MetricName: metricNames[uq.Metric], SlotName: uq.Granularity}
	p.Data = &data
	if err != nil {
		p.Error, data.Invalid = err.Error(), true
		d.render(w, r, http.StatusBadRequest, "usage", p)
		return nil
	}
	if d.cfg.Sources == nil {
		data.NoService = true
		d.render(w, r, http.StatusOK, "usage", p)
		return nil
	}
	ctx, orgID := r.Context(), viewerOf(r).Organisation.ID
	oq := sources.OrgUsageQuery{From: from, To: to, Granularity: uq.Granularity}
	if uq.User != "" {
		pn, err := d.resolvePerson(ctx, orgID, uq.User)
		if bad := (badParam{}); errors.As(err, &bad) {
			p.Error, data.Invalid = bad.msg, true
			d.render(w, r, http.StatusBadRequest, "usage", p)
			return nil
		} else if err != nil {
			return err
		}
		data.Person, oq.UserIDs, data.Everyone = &pn, pn.IDs, usageLink(uq, "")
	}
	u, err := d.cfg.Sources.OrgUsage(ctx, orgID, oq)
	if msg, status, ok := clientMessage(err); ok {
		p.Error, data.Invalid = msg, true
		d.render(w, r, status, "usage", p)
		return nil
	} else if err != nil {
		return err
	}
	seen, err := d.seenUsers(ctx, orgID, u.From, u.To, u.ByUser, data.Person != nil)
	if err != nil {
		return err
	}
	if data.Suggest, err = d.personSuggestions(ctx, orgID, seen); err != nil {
		return err
	}
	data.build(u, uq)
	d.render(w, r, http.StatusOK, "usage", p)
	return nil
}

// build fills data from u.
func (data *usageData) build(u sources.OrgUsage, uq usageQuery) {
	data.Sources = len(u.Sources)
	data.NoSources = len(u.Sources) == 0
	data.Empty = len(u.Total) == 0
	unit := 24 * time.Hour
	if u.Granularity == spec.GranularityHour {
		unit = time.Hour
	}
	data.Range = u.From.Format("2 January 2006") + " – " + u.To.Add(-time.Nanosecond).Format("2 January 2006") + " (UTC), by " + u.Granularity
	if data.Empty {
		return
	}

	// The slots of the range, oldest first.
	var slots []time.Time
	for t := u.From; t.Before(u.To); t = t.Add(unit) {
		slots = append(slots, t)
	}
	index := make(map[int64]int, len(slots))
	axis, tips := make([]string, len(slots)), make([]string, len(slots))
	for i, t := range slots {
		index[t.UnixMilli()] = i
		tips[i] = slotLabel(t, u.Granularity)
		axis[i] = axisLabel(t, u.Granularity, i)
	}

	// In total.
	data.Total = newSums()
	perSlot := make([]sums, len(slots))
	seen := make([]bool, len(slots))
	for i := range perSlot {
		perSlot[i] = newSums()
	}
	for _, p := range u.Total {
		i, ok := index[p.Start.UnixMilli()]
		if !ok {
			continue
		}
		perSlot[i].add(p)
		seen[i] = true
		data.Total.add(p)
	}
	values := make([]float64, len(slots))
	for i, s := range perSlot {
		values[i] = s.metric(uq.Metric)
		if seen[i] {
			data.OverTimeRow = append(data.OverTimeRow, slotRow{Label: tips[i], sums: s})
		}
	}
	format := compact
	if uq.Metric == metricCost {
		format = func(v float64) string {
			if v == 0 {
				return "0"
			}
			return compactMoney(v)
		}
	}
	total := chart{ID: "c-total", Label: data.MetricName + " per " + u.Granularity + ", in total", Slots: axis, Tips: tips,
		Series: []series{{Name: data.MetricName, Values: values}}, Format: format}
	data.OverTime = total.SVG()

	// Per source, model and user.
	names := make(map[string]string, len(u.Sources))
	for _, s := range u.Sources {
		names[s.ID] = s.Name
	}
	for _, g := range []struct {
		id, title, dim string
		points         []sqlstore.UsagePoint
		key            func(sqlstore.UsagePoint) string
	}{
		{"c-source", "per source", "Source", u.BySource, func(p sqlstore.UsagePoint) string {
			if n, ok := names[p.Source]; ok {
				return n
			}
			return p.Source
		}},
		{"c-model", "per model", "Model", u.ByModel, func(p sqlstore.UsagePoint) string {
			return cmp.Or(p.Model, "(model not reported)")
		}},
		{"c-user", "per user", "User", u.ByUser, func(p sqlstore.UsagePoint) string {
			return cmp.Or(p.UserID, "(no user)")
		}},
	} {
		data.Groups = append(data.Groups, groupSeries(g.id, g.title, g.dim, g.points, g.key, index, axis, tips, seen, uq.Metric, data.MetricName, u.Granularity, format))
	}
	// Each user's row leads to the page kept to them.
	users := &data.Groups[len(data.Groups)-1]
	for i, row := range users.Rows {
		if row.Name != "(no user)" {
			users.Rows[i].Href = usageLink(uq, row.Name)
		}
	}
}

// groupSeries draws the points grouped by key: the topGroups largest
// groups by metric apart, the rest as "Other".
func groupSeries(id, title, dim string, points []sqlstore.UsagePoint, key func(sqlstore.UsagePoint) string,
	index map[int64]int, axis, tips []string, seen []bool, metric, metricName, gran string, format func(float64) string) groupChart {
	gc := groupChart{ID: id, Title: title, Dimension: dim, Total: newSums()}
	byGroup := map[string]*sums{}
	perSlot := map[string][]sums{}
	for _, p := range points {
		i, ok := index[p.Start.UnixMilli()]
		if !ok {
			continue
		}
		k := key(p)
		if byGroup[k] == nil {
			s := newSums()
			byGroup[k] = &s
			perSlot[k] = make([]sums, len(axis))
			for j := range perSlot[k] {
				perSlot[k][j] = newSums()
			}
		}
		byGroup[k].add(p)
		perSlot[k][i].add(p)
		gc.Total.add(p)
	}
	for k, s := range byGroup {
		gc.Rows = append(gc.Rows, groupRow{Name: k, sums: *s})
	}
	slices.SortFunc(gc.Rows, func(a, b groupRow) int {
		return cmp.Or(cmp.Compare(b.metric(metric), a.metric(metric)), cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.Name, b.Name))
	})
	shown := len(gc.Rows)
	if shown > topGroups+1 { // six fit; seven or more fold into "Other"
		shown = topGroups
	}
	whole := gc.Total.metric(metric)
	var drawn []series
	other := series{Name: fmt.Sprintf("Other (%d)", len(gc.Rows)-shown), Style: otherStyle, Values: make([]float64, len(axis))}
	otherSums := newSums()
	for i := range gc.Rows {
		row := &gc.Rows[i]
		if whole > 0 {
			row.Share = strconv.FormatFloat(100*row.metric(metric)/whole, 'f', 1, 64) + "%"
		} else {
			row.Share = "—"
		}
		vals := make([]float64, len(axis))
		for j, s := range perSlot[row.Name] {
			vals[j] = s.metric(metric)
		}
		if i < shown {
			row.Swatch = swatchSVG(id, i)
			drawn = append(drawn, series{Name: row.Name, Style: i, Values: vals})
			gc.Legend = append(gc.Legend, *row)
			continue
		}
		row.Swatch, row.Folded = swatchSVG(id, otherStyle), true
		for j, v := range vals {
			other.Values[j] += v
		}
		otherSums.merge(row.sums)
	}
	if shown < len(gc.Rows) {
		drawn = append(drawn, other)
		o := groupRow{Name: other.Name, Swatch: swatchSVG(id, otherStyle), sums: otherSums}
		gc.Legend = append(gc.Legend, o)
	}
	c := chart{ID: id, Label: fmt.Sprintf("%s per %s, %s: %s", metricName, gran, title, strings.Join(seriesNames(drawn), ", ")),
		Slots: axis, Tips: tips, Series: drawn, Format: format}
	gc.SVG = c.SVG()

	// The matrix: the drawn values per slot with activity.
	for _, s := range drawn {
		gc.Head = append(gc.Head, s.Name)
	}
	for j := range axis {
		if !seen[j] {
			continue
		}
		row := matrixRow{Label: tips[j]}
		sum := 0.0
		for _, s := range drawn {
			row.Values = append(row.Values, formatMetric(metric, s.Values[j]))
			sum += s.Values[j]
		}
		row.Total = formatMetric(metric, sum)
		gc.Matrix = append(gc.Matrix, row)
	}
	return gc
}

func seriesNames(ss []series) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name
	}
	return out
}

// formatMetric writes a value of metric for a table.
func formatMetric(metric string, v float64) string {
	if metric == metricCost {
		return money(v)
	}
	return thousands(int64(v))
}

func compactMoney(v float64) string {
	if v >= 1000 {
		return compact(v)
	}
	return trimZero(v)
}

// slotLabel is a slot's full label: its date, and its hour by hours.
func slotLabel(t time.Time, gran string) string {
	if gran == spec.GranularityHour {
		return t.Format("2006-01-02 15:00")
	}
	return t.Format(dateLayout)
}

// axisLabel is a slot's short label on the time axis: "Jan 2" by days;
// by hours the hour, and the date at midnight and for the first.
func axisLabel(t time.Time, gran string, i int) string {
	if gran == spec.GranularityHour && t.Hour() != 0 && i != 0 {
		return t.Format("15:00")
	}
	return t.Format("Jan 2")
}
