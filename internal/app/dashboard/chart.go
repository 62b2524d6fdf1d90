package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Charts drawn by the server as SVG: no script, no external request. Colour
// is never the only signal: every series has a pattern of its own, a name
// in the legend, and a table of its numbers next to the chart.

// chart is a bar chart over time slots, one bar per slot, stacked by
// series from the bottom up.
type chart struct {
	ID     string   // unique in the page: prefixes the ids of its patterns
	Label  string   // what it shows: the SVG's title and aria-label
	Slots  []string // the axis labels of the slots, oldest first ("" for none)
	Tips   []string // the full labels of the slots, for the bars' titles
	Series []series
	Format func(float64) string // a value, as the axis and titles show it
}

// series is one stacked part of the bars.
type series struct {
	Name   string
	Style  int       // index into palette
	Values []float64 // one per slot
}

// swatch is a pattern of the palette: a colour (Okabe–Ito, told apart by
// people with colour vision deficiencies) and a texture drawn over it.
type swatch struct {
	Fill, Texture string // Texture is SVG drawn in white on a 6x6 tile
}

var palette = []swatch{
	{"#0072b2", ""},
	{"#e69f00", `<path d="M-1,1 l2,-2 M0,6 l6,-6 M5,7 l2,-2" stroke="#fff" stroke-width="1.5"/>`},
	{"#009e73", `<circle cx="3" cy="3" r="1.3" fill="#fff"/>`},
	{"#cc79a7", `<path d="M0,3 h6 M3,0 v6" stroke="#fff" stroke-width="1.2"/>`},
	{"#56b4e9", `<path d="M0,1.5 h6 M0,4.5 h6" stroke="#fff" stroke-width="1"/>`},
	{"#6b7280", `<path d="M1.5,0 v6 M4.5,0 v6" stroke="#fff" stroke-width="1"/>`},
}

// otherStyle is the palette entry of "Other", the series that sums the rest.
const otherStyle = 5

// The geometry of a chart, in SVG user units.
const (
	chartW, chartH                       = 640, 220
	padLeft, padRight, padTop, padBottom = 56, 8, 12, 26
	maxAxisLabels                        = 8
)

func patternID(chartID string, style int) string {
	return chartID + "-p" + strconv.Itoa(style)
}

// defs returns the pattern definitions of the styles used.
func (c *chart) defs(b *strings.Builder) {
	used := map[int]bool{}
	for _, s := range c.Series {
		used[s.Style] = true
	}
	b.WriteString("<defs>")
	for i, p := range palette {
		if !used[i] {
			continue
		}
		fmt.Fprintf(b, `<pattern id="%s" width="6" height="6" patternUnits="userSpaceOnUse"><rect width="6" height="6" fill="%s"/>%s</pattern>`,
			patternID(c.ID, i), p.Fill, p.Texture)
	}
	b.WriteString("</defs>")
}

// SVG draws the chart.
func (c *chart) SVG() template.HTML {
	esc := template.HTMLEscapeString
	n := len(c.Slots)
	top := 0.0
	for i := range n {
		sum := 0.0
		for _, s := range c.Series {
			sum += s.Values[i]
		}
		top = math.Max(top, sum)
	}
	top = niceCeil(top)
	plotW, plotH := float64(chartW-padLeft-padRight), float64(chartH-padTop-padBottom)
	y := func(v float64) float64 { return padTop + plotH - v/top*plotH }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s" focusable="false" xmlns="http://www.w3.org/2000/svg">`,
		chartW, chartH, esc(c.Label))
	fmt.Fprintf(&b, `<title>%s</title>`, esc(c.Label))
	c.defs(&b)

	// The value axis: five grid lines with their values.
	b.WriteString(`<g class="grid" aria-hidden="true">`)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, padLeft, chartW-padRight, y(v), y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, padLeft-6, y(v), esc(c.Format(v)))
	}
	b.WriteString(`</g>`)

	// The bars, stacked.
	if n > 0 {
		slot := plotW / float64(n)
		bar := math.Max(slot*0.72, 0.5)
		b.WriteString(`<g class="bars">`)
		for i := range n {
			x := padLeft + float64(i)*slot + (slot-bar)/2
			base := 0.0
			for _, s := range c.Series {
				v := s.Values[i]
				if v <= 0 {
					continue
				}
				y0, y1 := y(base), y(base+v)
				base += v
				tip := s.Name + ": " + c.Format(v)
				if i < len(c.Tips) {
					tip = c.Tips[i] + " · " + tip
				}
				fmt.Fprintf(&b, `<rect class="bar" x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="url(#%s)"><title>%s</title></rect>`,
					x, y1, bar, math.Max(y0-y1, 0.5), patternID(c.ID, s.Style), esc(tip))
			}
		}
		b.WriteString(`</g>`)

		// The time axis: at most maxAxisLabels labels, evenly spread.
		step := (n + maxAxisLabels - 1) / maxAxisLabels
		b.WriteString(`<g class="axis" aria-hidden="true">`)
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, padLeft, chartW-padRight, y(0), y(0))
		for i := 0; i < n; i += step {
			if c.Slots[i] == "" {
				continue
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`,
				padLeft+(float64(i)+0.5)*slot, chartH-8, esc(c.Slots[i]))
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // every text is escaped above
}

// Swatch returns a small square of a series' pattern, for the legend and
// the tables; it refers to the patterns of chart chartID.
func swatchSVG(chartID string, style int) template.HTML {
	return template.HTML(fmt.Sprintf(`<svg class="swatch" viewBox="0 0 12 12" aria-hidden="true" focusable="false"><rect width="12" height="12" fill="url(#%s)"/></svg>`,
		patternID(chartID, style)))
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten; 0 gives 1.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// compact writes v briefly for an axis: 950, 1.2k, 3.4M.
func compact(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return trimZero(v/1e9) + "G"
	case a >= 1e6:
		return trimZero(v/1e6) + "M"
	case a >= 1e3:
		return trimZero(v/1e3) + "k"
	case a == math.Trunc(a):
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return trimZero(v)
	}
}

func trimZero(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// thousands writes n with a comma between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
