package cli

import (
	"flag"
	"time"

	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/httpx"
)

// proxyFlags is --trusted-proxy, of the commands that serve the dashboard
// (service serve, demo).
type proxyFlags struct {
	trustedProxies httpx.TrustedProxies
}

// register declares --trusted-proxy on fs.
func (p *proxyFlags) register(fs *flag.FlagSet) {
	fs.Var(&p.trustedProxies, "trusted-proxy", "`ADDRS` (IP addresses or CIDR prefixes, separated by commas; repeatable) of the reverse proxies and load balancers "+
		"whose X-Forwarded-For and X-Forwarded-Proto are believed, for the client's address and the Secure cookie (default: none; every peer is the client)")
}

// inviteTTLFlag is --invite-ttl: how long a one-time password (an invitation
// or a reset) may be used before it expires.
type inviteTTLFlag struct {
	inviteTTL time.Duration
}

// register declares --invite-ttl on fs.
func (f *inviteTTLFlag) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.inviteTTL, "invite-ttl", people.DefaultOneTimePasswordTTL,
		"how long a one-time password (an invitation or a reset) may be used before it expires; it must be changed at the first sign-in")
}

// check refuses a --invite-ttl that is not positive.
func (f *inviteTTLFlag) check(cmd string) error {
	if f.inviteTTL < time.Minute {
		return usagef("%s: --invite-ttl must be at least 1m, got %s", cmd, f.inviteTTL)
	}
	return nil
}
