package sources

import (
	"errors"
	"fmt"
	"time"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/vendorusage"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// Sources of TransportOpenAI and TransportAnthropic read an organisation's
// usage and costs from the vendor's administration API with its Admin key
// (package consumer/vendorusage): usage only, in hourly buckets grouped by
// every dimension, the daily cost buckets re-read whole (the poller's
// usage windows aligned to UTC days). Their URL is the vendor's base
// address, by default vendorusage.DefaultOpenAIURL or DefaultAnthropicURL;
// the token, their Admin key, is stored encrypted like every source's token
// and sent to that address's origin only: a redirect to another host fails
// the sync.

// IsVendor reports whether transport is one of the vendors' usage APIs
// (TransportOpenAI, TransportAnthropic).
func IsVendor(transport string) bool {
	return transport == TransportOpenAI || transport == TransportAnthropic
}

// VendorURL returns the default base address of a vendor transport, "" for
// any other.
func VendorURL(transport string) string {
	switch transport {
	case TransportOpenAI:
		return vendorusage.DefaultOpenAIURL
	case TransportAnthropic:
		return vendorusage.DefaultAnthropicURL
	}
	return ""
}

// vendorTitle is how a vendor transport names its vendor.
func vendorTitle(transport string) string {
	if transport == TransportAnthropic {
		return "Anthropic"
	}
	return "OpenAI"
}

// Resources returns the resources a source of transport syncs and shows:
// usage only for the vendors' usage APIs, all four otherwise.
func Resources(transport string) []consumer.Resource {
	if IsVendor(transport) {
		return []consumer.Resource{consumer.Usage}
	}
	return consumer.Resources
}

// vendorSource returns the transport of a source of TransportOpenAI or
// TransportAnthropic, reaching the vendor with the service's guarded
// client.
func (s *Service) vendorSource(src Source) (consumer.Source, error) {
	client := *s.client // the source sets its own redirect policy on its copy
	if client.Timeout == 0 {
		client.Timeout = 60 * time.Second
	}
	cfg := vendorusage.Config{BaseURL: src.URL, Key: src.Token, HTTPClient: &client,
		Rate: s.cfg.VendorRate, Logger: s.log.With("source", src.ID),
		OnRetry: s.onRetry}
	if src.Transport == TransportAnthropic {
		return vendorusage.NewAnthropic(cfg)
	}
	return vendorusage.NewOpenAI(cfg)
}

// vendorPoller completes the poller's configuration for a vendor source:
// what vendorusage.PollerConfig says (usage only, hourly, every dimension,
// usage windows aligned to UTC days).
func vendorPoller(cfg *consumer.Config) {
	v := vendorusage.PollerConfig()
	cfg.Resources, cfg.UsageGranularity, cfg.UsageGroupBy, cfg.UsageAlign = v.Resources, v.UsageGranularity, v.UsageGroupBy, v.UsageAlign
}

// describer returns the function that classifies a sync's errors of src
// for its organisation ([Describe]); for a vendor's usage API, a refused
// Admin key is shown with the vendor's answer (its status and message,
// never the key), which is what the Administrator needs to fix it.
func describer(src Source) func(error) string {
	if !IsVendor(src.Transport) {
		return Describe
	}
	title := vendorTitle(src.Transport)
	return func(err error) string {
		if !errors.Is(err, provider.ErrUnauthorized) && !errors.Is(err, provider.ErrForbidden) {
			return Describe(err)
		}
		var se *spec.Error
		if errors.As(err, &se) && se.Detail != "" {
			return fmt.Sprintf("%s refused the Admin key: %s", title, se.Detail)
		}
		return title + " refused the Admin key"
	}
}

// defaultVendor fills in the URL of a vendor source left empty.
func defaultVendor(n *SourceCreate) {
	if n.URL == "" {
		n.URL = VendorURL(n.Transport)
	}
	if n.Every == 0 {
		n.Every = DefaultVendorEvery
	}
}
