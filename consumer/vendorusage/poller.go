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
// configured with, under the source name source: usage only, hourly
// buckets grouped by all four dimensions, windows aligned on UTC days
// ([UsageAlign]). The look-back (UsageTrailing, default 48h) and the first
// sync's history (UsageBackfill, default 30 days) keep the poller's
// defaults; set them on the result.
func PollerConfig(source string) consumer.Config {
	return consumer.Config{
		Source:           source,
		Resources:        []consumer.Resource{consumer.Usage},
		UsageGranularity: spec.GranularityHour,
		UsageGroupBy:     append([]string{}, spec.Dimensions...),
		UsageAlign:       UsageAlign,
	}
}
