package cli

import (
	"errors"
	"flag"
	"math"
	"strconv"

	"github.com/aiusage/kit/internal/app/telemetry"
)

// otlpRateFlags are --otlp-rate and --otlp-burst: the rate
// limit of each Ingestion key at the telemetry endpoint. Their values are
// checked as they are parsed (from the command line or the environment).
type otlpRateFlags struct {
	rate  rateValue
	burst burstValue
}

func (o *otlpRateFlags) register(fs *flag.FlagSet) {
	o.rate, o.burst = rateValue(telemetry.DefaultRatePerKey), burstValue(telemetry.DefaultRateBurst)
	fs.Var(&o.rate, "otlp-rate", "`N` OTLP requests a second one Ingestion key may send on average in this process, over HTTP and gRPC together (a tool sends about 0.4); more are answered 429 with Retry-After; 0 turns the limit off")
	fs.Var(&o.burst, "otlp-burst", "`N` OTLP requests one Ingestion key may send at once after a quiet spell, above --otlp-rate")
}

// config returns the telemetry endpoint's configuration of the flags.
func (o *otlpRateFlags) config() telemetry.Config {
	c := telemetry.Config{RatePerKey: float64(o.rate), RateBurst: int(o.burst)}
	if o.rate == 0 {
		c.RatePerKey = -1 // off
	}
	return c
}

// rateValue is a number of requests a second, 0 or more.
type rateValue float64

func (v *rateValue) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 64) }

func (v *rateValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return errors.New("must be a number of requests a second, 0 or more")
	}
	*v = rateValue(f)
	return nil
}

// burstValue is a number of requests, at least 1.
type burstValue int

func (v *burstValue) String() string { return strconv.Itoa(int(*v)) }

func (v *burstValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return errors.New("must be a whole number of requests, at least 1")
	}
	*v = burstValue(n)
	return nil
}
