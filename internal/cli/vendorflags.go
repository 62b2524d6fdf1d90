package cli

import (
	"flag"
	"math"
	"time"

	"github.com/aiusage/kit/consumer/vendorusage"
)

// vendorFlags are the flags of the sources that read OpenAI's and
// Anthropic's administration usage APIs: the request rate, and on the
// service the history of a first sync and the look-back of the later ones
// (consumer sync has --usage-backfill and --usage-trailing for those).
type vendorFlags struct {
	rate               float64
	backfill, lookback time.Duration
}

// register declares --vendor-rate on fs, and with history the
// --vendor-backfill and --vendor-lookback of the service.
func (f *vendorFlags) register(fs *flag.FlagSet, history bool) {
	fs.Float64Var(&f.rate, "vendor-rate", vendorusage.DefaultRate, "most `N` requests a second one sync of an OpenAI or Anthropic source sends to the vendor, retries included")
	if history {
		fs.DurationVar(&f.backfill, "vendor-backfill", 30*24*time.Hour, "how far back the first sync of an OpenAI or Anthropic source reads usage and costs")
		fs.DurationVar(&f.lookback, "vendor-lookback", 48*time.Hour, "the recent usage and costs every later sync of an OpenAI or Anthropic source reads again, as the vendors revise them")
	}
}

// check checks the flags' values.
func (f *vendorFlags) check(cmd string) error {
	switch {
	case math.IsNaN(f.rate) || math.IsInf(f.rate, 0) || f.rate <= 0 || f.rate > 1000:
		return usagef("%s: --vendor-rate must be a number of requests a second above 0 and at most 1000, got %v", cmd, f.rate)
	case f.backfill < 0:
		return usagef("%s: --vendor-backfill must not be negative, got %v", cmd, f.backfill)
	case f.lookback < 0:
		return usagef("%s: --vendor-lookback must not be negative, got %v", cmd, f.lookback)
	}
	return nil
}
