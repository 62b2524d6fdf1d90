package vendorusage

import (
	"time"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/spec"
)

// UsageAlign is the alignment of every usage window a poller of these
// sources reads: a UTC day, so that the daily cost buckets of a window are
// always read whole (a window that started mid-day would sweep the cost
// bucket of its first day, which starts before it).
const UsageAlign = 24 * time.Hour

// PollerConfig returns what a [consumer.Poller] of these sources must be
// configured with: usage only, hourly buckets grouped by all four
// dimensions, windows aligned on UTC days ([UsageAlign]). Set Source (the
// source's name) on the result, and whatever else the caller decides; the
// look-back (UsageTrailing, default 48h) and the first sync's history
// (UsageBackfill, default 30 days) keep the poller's defaults.
func PollerConfig() consumer.Config {
	return consumer.Config{
		Resources:        []consumer.Resource{consumer.Usage},
		UsageGranularity: spec.GranularityHour,
		UsageGroupBy:     append([]string{}, spec.Dimensions...),
		UsageAlign:       UsageAlign,
	}
}
