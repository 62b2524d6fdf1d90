package sources

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/export"
	"github.com/aiusage/kit/internal/infra/netguard"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// What an organisation is told of a failed sync. A source's URL is chosen
// by the organisation's Administrator, so a sync is a request the service
// makes on a tenant's word: the words of the answer (a status line, the
// start of a body, a remote problem's detail) and what the service's host
// or network said (a file's absence, an address a name resolved to) would
// let a tenant probe what lies behind the service. The organisation gets one
// of a few classified texts ([Describe]); the whole error goes to the
// service's log.

// ErrPaused is a sync of a paused source: it waits for an Administrator to
// resume it ([Service.Resume]) or edit its URL. It wraps spec.ErrConflict.
var ErrPaused = fmt.Errorf("the source is paused: %w", spec.ErrConflict)

// errNoExportDirs is a directory export on a service without an export
// root, and errExportOutside one outside it.
var (
	errNoExportDirs  = errors.New("this service reads exports from no directory of its host")
	errExportOutside = errors.New("the export's directory is outside those this service may read")
)

// SyncError is the error of a failed sync ([Service.SyncNow]). Its text is
// what the organisation is shown, one classified line per failed resource;
// it wraps the whole error, for the log and for errors.Is.
type SyncError struct {
	// Text is the classified text, lines joined by "\n".
	Text string
	// Err is the whole error.
	Err error
	// Paused reports that this failure paused the source.
	Paused bool
}

func (e *SyncError) Error() string { return e.Text }
func (e *SyncError) Unwrap() error { return e.Err }

// Pausing reports whether err is a failure that syncing again cannot mend,
// so that the source is paused rather than retried at every start and
// schedule: an export past the reader's bounds (a compression bomb, a file
// or line too large) or a directory the service may not read.
func Pausing(err error) bool {
	return errors.Is(err, export.ErrTooLarge) || errors.Is(err, export.ErrOutsideRoot) ||
		errors.Is(err, errNoExportDirs) || errors.Is(err, errExportOutside)
}

// Describe returns the classified text of a sync's error, as the
// organisation sees it: never the remote's words nor what the host's file
// system or network said.
func Describe(err error) string {
	var ue *url.Error
	var ne net.Error
	var dns *net.DNSError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrPaused):
		return "the source is paused"
	case errors.Is(err, export.ErrTooLarge):
		return "the export is larger than this service reads (a file or a line decompresses past its bounds, or a file is larger than the bound)"
	case errors.Is(err, errNoExportDirs):
		return "this service reads no directory of its host: give the export's https:// address"
	case errors.Is(err, export.ErrOutsideRoot) || errors.Is(err, errExportOutside):
		return "the export's directory is not one this service may read"
	case errors.Is(err, consumer.ErrRedirect):
		return "the source redirected the request to another address, which is not followed"
	case errors.Is(err, netguard.ErrForbiddenAddress), errors.As(err, &dns):
		return "the source cannot be reached at its address"
	case errors.Is(err, provider.ErrUnauthorized), errors.Is(err, provider.ErrForbidden):
		return "the source refused the token"
	case errors.Is(err, export.ErrCorrupt):
		return "the export is corrupt: a file or a manifest does not match what the export format says"
	case errors.Is(err, provider.ErrUnsupported), errors.Is(err, provider.ErrNotFound):
		return "not an AI usage data provider: the source does not serve the interface at its address"
	case errors.Is(err, provider.ErrInvalid):
		return "the source refused the sync's requests: it is not an AI usage data provider this service can read"
	case errors.Is(err, provider.ErrUnavailable):
		return "the source failed: it answered with a server error or could not be read; it is tried again at its next sync"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "the source did not answer in time"
	case errors.Is(err, context.Canceled):
		return "the sync was interrupted"
	case errors.As(err, &ue), errors.As(err, &ne):
		return "the source cannot be reached at its address"
	case errors.Is(err, consumer.ErrLeaseLost):
		return "another sync of the source took over"
	}
	return "not an AI usage data provider: the source's answers are not those of the interface"
}
