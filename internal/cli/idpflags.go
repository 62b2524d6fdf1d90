package cli

import (
	"flag"
	"net/url"
	"strings"
)

// idpFlags are the flags of single sign-on that the operator decides: which
// identity providers the organisations' settings may name, and the address
// browsers reach the service at, from which the redirect URI registered at
// the identity providers is made.
type idpFlags struct {
	allowPrivate bool
	publicURL    string
}

// register adds --allow-private-idp (default allow) and --public-url to fs.
func (f *idpFlags) register(fs *flag.FlagSet, allow bool) {
	fs.BoolVar(&f.allowPrivate, "allow-private-idp", allow, "let identity providers' issuer URLs be http and point at private, loopback or link-local addresses (local use only)")
	fs.StringVar(&f.publicURL, "public-url", "", "the `URL` browsers reach the service at, such as https://oversight.example.com: the base of the single sign-on redirect URI "+
		"(default: the scheme and host of each request)")
}

// check checks --public-url: an absolute http or https URL without query or
// fragment. Its trailing slash is dropped.
func (f *idpFlags) check(cmd string) error {
	if f.publicURL == "" {
		return nil
	}
	u, err := url.Parse(f.publicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(f.publicURL, "#?") {
		return usagef("%s: --public-url must be an absolute http or https URL without query, such as https://oversight.example.com, got %q", cmd, f.publicURL)
	}
	f.publicURL = strings.TrimSuffix(f.publicURL, "/")
	return nil
}
