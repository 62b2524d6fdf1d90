package sources

import (
	"fmt"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/export"
	"github.com/aiusage/kit/spec"
)

// A source of TransportExport reads the provider's scheduled export
// (docs/export.md) with consumer/export instead of calling its REST
// interface. Its URL says where the export is: an https:// base address,
// an http:// one on a loopback address, or a directory of the service's
// host, given as an absolute path or a file:// URL (a share the vendor
// writes to). Its token is optional and sent as a bearer token over HTTP
// only; a directory takes none.

// checkExportURL checks the URL of a source of TransportExport, and that
// a directory comes without a token.
func checkExportURL(raw, token string) error {
	dir, _, err := export.ParseURL(raw)
	if err != nil {
		return fmt.Errorf("url: %v: %w", err, spec.ErrInvalid)
	}
	if dir != "" && token != "" {
		return fmt.Errorf("the export at %s is a directory, which takes no token: %w", dir, spec.ErrInvalid)
	}
	return nil
}

// exportSource returns the transport of a source of TransportExport.
func (s *Service) exportSource(src Source) (consumer.Source, error) {
	if err := checkExportURL(src.URL, src.Token); err != nil {
		return nil, err
	}
	return export.New(export.Config{URL: src.URL, Token: src.Token, HTTPClient: s.cfg.HTTPClient,
		MaxRetries: 3, Logger: s.log.With("source", src.ID)})
}
