package reviewapi

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/aiusage/kit/internal/infra/netguard"
)

// Webhook URLs are chosen by clients, so a webhook is a way to make the
// service send requests where it is told (server-side request forgery). The
// guard (package netguard, shared with the sources the service syncs) is the
// address actually connected to: [NewWebhookClient] checks it in the dialer,
// after name resolution, so a host name that resolved to a public address at
// registration and to 127.0.0.1 at delivery (DNS rebinding) is still refused.
// [CheckWebhookURL] repeats the check at registration to give the client an
// early, precise error.

// DefaultWebhookTimeout is the time one delivery attempt may take, from
// dialling to the end of the response body, when [NewWebhookClient] is given
// no timeout.
const DefaultWebhookTimeout = 10 * time.Second

// MaxWebhookURLLen is the longest webhook URL accepted, in bytes.
const MaxWebhookURLLen = netguard.MaxURLLen

var (
	// ErrForbiddenAddress: a webhook may not be sent to the address (loopback,
	// private, link-local and other non-public ranges); see
	// [netguard.ErrForbiddenAddress].
	ErrForbiddenAddress = netguard.ErrForbiddenAddress
	// ErrInvalidWebhookURL: the URL given at registration cannot be used; the
	// error says why. It becomes a 400 naming the field url. See
	// [netguard.ErrInvalidURL].
	ErrInvalidWebhookURL = netguard.ErrInvalidURL
	// ErrUnreachableHost: the URL's host name does not resolve, resolves
	// to no address, or resolves to an address the policy forbids; see
	// [netguard.ErrUnreachableHost]. Answer the client
	// [UnreachableHostMessage].
	ErrUnreachableHost = netguard.ErrUnreachableHost
)

// UnreachableHostMessage is what a client is told about a URL whose host
// [ErrUnreachableHost] refuses (see [netguard.UnreachableHostMessage]).
func UnreachableHostMessage(allowPrivate bool) string {
	return netguard.UnreachableHostMessage(allowPrivate)
}

// AddressPolicy decides which IP addresses webhooks may be delivered to
// (see [netguard.Policy]). The zero value is the production policy: public
// unicast addresses only; AllowPrivate is set by aiusage service serve
// --allow-private-webhooks.
type AddressPolicy = netguard.Policy

// NewWebhookClient returns the HTTP client that delivers webhooks:
//
//   - every connection is checked against p after name resolution
//     ([netguard.NewTransport]), and refused with an error wrapping
//     [ErrForbiddenAddress];
//   - no proxy: HTTP_PROXY and friends are ignored, since the address
//     checked must be the receiver's;
//   - redirects are not followed: the 3xx response itself is returned, and
//     counts as a failed delivery;
//   - timeout bounds one attempt, from dialling to the end of the response
//     body; 0 or less means [DefaultWebhookTimeout].
func NewWebhookClient(p AddressPolicy, timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = DefaultWebhookTimeout
	}
	return &http.Client{
		Transport: netguard.NewTransport(p, timeout),
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// defaultWebhookClient is the client [Deliver] uses when given none: the
// production policy and timeout.
var defaultWebhookClient = sync.OnceValue(func() *http.Client {
	return NewWebhookClient(AddressPolicy{}, 0)
})

// CheckWebhookURL checks a webhook URL at registration: see
// [netguard.CheckURL].
func CheckWebhookURL(ctx context.Context, raw string, p AddressPolicy, resolver *net.Resolver) error {
	return netguard.CheckURL(ctx, raw, p, resolver)
}
