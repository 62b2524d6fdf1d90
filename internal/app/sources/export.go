package sources

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/export"
	"github.com/aiusage/kit/internal/infra/netguard"
	"github.com/aiusage/kit/spec"
)

// A source of TransportExport reads the provider's scheduled export
// (docs/export.md) with consumer/export instead of calling its REST
// interface. Its URL says where the export is: an https:// base address
// (http:// too, and private addresses, when Config.AllowPrivate), or a
// directory of the service's host below Config.ExportRoot, given as an
// absolute path or a file:// URL (a share the vendor writes to). Only the
// operator decides which directories a tenant may read: without an export
// root, no directory is; the check is made when the source is added or
// moved, and again at every sync (a source stored before the root changed
// must not read outside it), and the reads go through os.OpenRoot, so that
// neither a symbolic link nor ".." leads out. Its token is optional and sent
// as a bearer token over HTTP only; a directory takes none.

// OrganisationPlaceholder in Config.ExportRoot stands for the organisation's
// id.
const OrganisationPlaceholder = "{organisation}"

// exportRoot returns the export root of organisation org ("" for none).
func (s *Service) exportRoot(org string) string {
	return strings.ReplaceAll(s.cfg.ExportRoot, OrganisationPlaceholder, org)
}

// checkExportDir checks that directory dir may be read by organisation
// org, without reading the file system; its error wraps errNoExportDirs or
// errExportOutside and names dir only.
func (s *Service) checkExportDir(org, dir string) error {
	root := s.exportRoot(org)
	if root == "" {
		return fmt.Errorf("url %s: %w", dir, errNoExportDirs)
	}
	if _, err := export.InRoot(root, dir); err != nil {
		return fmt.Errorf("url %s: %w", dir, errExportOutside)
	}
	return nil
}

// checkExportURL checks the URL of a source of TransportExport of
// organisation org: its form, a directory within the export root and
// without a token, an https address that passes the address policy.
func (s *Service) checkExportURL(ctx context.Context, org, raw, token string) error {
	dir, _, err := export.ParseURL(raw)
	if err != nil {
		return fmt.Errorf("url: %v: %w", err, spec.ErrInvalid)
	}
	if dir != "" {
		if token != "" {
			return fmt.Errorf("the export at %s is a directory, which takes no token: %w", dir, spec.ErrInvalid)
		}
		if err := s.checkExportDir(org, dir); err != nil {
			return fmt.Errorf("%w: %w", err, spec.ErrInvalid)
		}
		return nil
	}
	return s.checkURL(ctx, raw)
}

// policy is the address policy of the sources' connections.
func (s *Service) policy() netguard.Policy { return netguard.Policy{AllowPrivate: s.cfg.AllowPrivate} }

// checkURL checks the http(s) URL of a source when it is added or moved:
// with the address policy (netguard.CheckURL: https to a public address),
// or, when private addresses are allowed, an absolute http or https URL.
// A host name that does not resolve, or resolves to a refused address, gets
// one answer whatever the reason (netguard.UnreachableHostMessage): adding
// sources must not map the service's network.
func (s *Service) checkURL(ctx context.Context, raw string) error {
	if s.cfg.AllowPrivate {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("url must be an absolute http or https URL, got %q: %w", raw, spec.ErrInvalid)
		}
		return nil
	}
	err := netguard.CheckURL(ctx, raw, s.policy(), s.cfg.Resolver)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, netguard.ErrUnreachableHost):
		s.log.InfoContext(ctx, "sources: url refused", "url", raw, "error", err)
		return fmt.Errorf("%s: %w", netguard.UnreachableHostMessage(false), spec.ErrInvalid)
	case errors.Is(err, netguard.ErrInvalidURL):
		msg := strings.TrimPrefix(err.Error(), netguard.ErrInvalidURL.Error()+": ")
		if errors.Is(err, netguard.ErrForbiddenAddress) {
			msg = "url must be a public https URL: this service does not connect to private, loopback or link-local addresses"
		}
		return fmt.Errorf("%s, got %q: %w", msg, raw, spec.ErrInvalid)
	}
	return err // ctx ended
}

// exportSource returns the transport of a source of TransportExport. A
// directory is checked against the export root again: the root may have
// changed since the source was added.
func (s *Service) exportSource(src Source) (consumer.Source, error) {
	dir, _, err := export.ParseURL(src.URL)
	if err != nil {
		return nil, fmt.Errorf("url: %v: %w", err, spec.ErrInvalid)
	}
	// A whole file's download may take the export reader's 5 minutes.
	client := *s.client
	if client.Timeout == 0 {
		client.Timeout = 5 * time.Minute
	}
	cfg := export.Config{URL: src.URL, Token: src.Token, HTTPClient: &client, MaxRetries: SyncRetries, OnRetry: s.onRetry, Logger: s.log.With("source", src.ID),
		MaxFileBytes: s.cfg.ExportMaxFileBytes, MaxPlainBytes: s.cfg.ExportMaxFileBytes}
	if dir != "" {
		if err := s.checkExportDir(src.OrganisationID, dir); err != nil {
			return nil, err
		}
		cfg.Root = s.exportRoot(src.OrganisationID)
	}
	return export.New(cfg)
}
