package sso

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aiusage/kit/spec"
)

// Limits of the settings' fields.
const (
	MaxIssuerLength   = 2048
	MaxClientIDLength = 255
	MaxSecretLength   = 1024
	MaxDomains        = 100
	MaxScopes         = 20
	MaxScopeLength    = 64
	MaxClaimLength    = 128
	MaxValues         = 100
	MaxValueLength    = 256
)

// DefaultScopes are the scopes asked for when the settings name none.
var DefaultScopes = []string{"openid", "email", "profile"}

// DefaultRoleClaim is the role claim when the settings name none.
const DefaultRoleClaim = "groups"

// settingsFields is a SettingsInput checked and normalised (without the
// secret, checked apart).
type settingsFields struct {
	Issuer              string
	ClientID            string
	Domains             []string
	Scopes              []string
	RoleClaim           string
	AdministratorValues []string
	ReviewerValues      []string
	Unmapped            Unmapped
}

// hasControl says whether s holds a control character.
func hasControl(s string) bool { return strings.IndexFunc(s, unicode.IsControl) >= 0 }

// checkIssuer checks an issuer URL: absolute, https (http too when
// allowPrivate), a host, no user info, query or fragment.
func checkIssuer(raw string, allowPrivate bool) (string, error) {
	iss := strings.TrimSpace(raw)
	scheme := "https"
	if allowPrivate {
		scheme = "https (or http)"
	}
	switch {
	case iss == "":
		return "", spec.Invalid("issuer", "The issuer URL is required: your identity provider's issuer, such as https://login.microsoftonline.com/<tenant id>/v2.0.")
	case len(iss) > MaxIssuerLength:
		return "", spec.Invalid("issuer", "The issuer URL is %d bytes long, at most %d.", len(iss), MaxIssuerLength)
	case !utf8.ValidString(iss) || hasControl(iss) || strings.ContainsAny(iss, " \t"):
		return "", spec.Invalid("issuer", "The issuer URL must not hold spaces or control characters.")
	}
	u, err := url.Parse(iss)
	switch {
	case err != nil || !u.IsAbs() || u.Opaque != "" || u.Host == "":
		return "", spec.Invalid("issuer", "The issuer must be an absolute %s URL, such as https://accounts.example.com.", scheme)
	case u.Scheme != "https" && !(u.Scheme == "http" && allowPrivate):
		return "", spec.Invalid("issuer", "The issuer URL must use %s, not %s.", scheme, u.Scheme)
	case u.User != nil:
		return "", spec.Invalid("issuer", "The issuer URL must not hold a user name or password.")
	case u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(iss, "?#"):
		return "", spec.Invalid("issuer", "The issuer URL must not hold a query (?) or a fragment (#).")
	}
	return iss, nil
}

// checkToken checks a value without spaces or control characters of at
// most max bytes, as field.
func checkToken(field, what, v string, max int) (string, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return "", spec.Invalid(field, "The %s is required.", what)
	case len(v) > max:
		return "", spec.Invalid(field, "The %s is %d bytes long, at most %d.", what, len(v), max)
	case !utf8.ValidString(v) || hasControl(v) || strings.IndexFunc(v, unicode.IsSpace) >= 0:
		return "", spec.Invalid(field, "The %s must not hold spaces or control characters.", what)
	}
	return v, nil
}

// checkSecret checks a client secret given ("" is checked by the caller).
func checkSecret(v string) error {
	switch {
	case len(v) > MaxSecretLength:
		return spec.Invalid("clientSecret", "The client secret is %d bytes long, at most %d.", len(v), MaxSecretLength)
	case !utf8.ValidString(v) || hasControl(v):
		return spec.Invalid("clientSecret", "The client secret must not hold control characters.")
	case strings.TrimSpace(v) != v:
		return spec.Invalid("clientSecret", "The client secret must not start or end with spaces; copy it again from your identity provider.")
	}
	return nil
}

// CheckDomain returns an email domain normalised (trimmed, lowercased, a
// leading @ dropped), or an error saying why it is not one: a host name of
// at least two labels of letters, digits and hyphens (punycode for other
// scripts), at most 253 bytes.
func CheckDomain(raw string) (string, error) {
	d := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(raw), "@"))
	if d == "" {
		return "", fmt.Errorf("an empty domain")
	}
	if len(d) > 253 {
		return "", fmt.Errorf("the domain %.40q... is longer than 253 bytes", d)
	}
	labels := strings.Split(d, ".")
	if len(labels) < 2 {
		return "", fmt.Errorf("%q is not an email domain such as example.com", d)
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "", fmt.Errorf("%q is not an email domain such as example.com", d)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", fmt.Errorf("%q is not an email domain such as example.com (letters, digits, hyphens and dots; punycode for other scripts)", d)
			}
		}
	}
	return d, nil
}

// SplitList splits a list a person typed (separated by commas, spaces or
// new lines) into its items, empty ones dropped: for the domains, scopes
// and claim values of a form.
func SplitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || unicode.IsSpace(r) })
}

// checkDomains returns the domains normalised, unique and sorted.
func checkDomains(in []string) ([]string, error) {
	var out []string
	for _, raw := range in {
		d, err := CheckDomain(raw)
		if err != nil {
			return nil, spec.Invalid("domains", "The email domains must be domains such as example.com: %v.", err)
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	switch {
	case len(out) == 0:
		return nil, spec.Invalid("domains", "At least one email domain is required: the domains of the email addresses your identity provider signs in, such as example.com.")
	case len(out) > MaxDomains:
		return nil, spec.Invalid("domains", "There are %d email domains, at most %d.", len(out), MaxDomains)
	}
	slices.Sort(out)
	return out, nil
}

// checkScopes returns the scopes, openid first, each once; nil is
// DefaultScopes.
func checkScopes(in []string) ([]string, error) {
	if in == nil {
		return slices.Clone(DefaultScopes), nil
	}
	out := []string{"openid"}
	for _, raw := range in {
		sc := strings.TrimSpace(raw)
		if sc == "" {
			continue
		}
		if len(sc) > MaxScopeLength {
			return nil, spec.Invalid("scopes", "The scope %.20q... is longer than %d bytes.", sc, MaxScopeLength)
		}
		for i := 0; i < len(sc); i++ { // RFC 6749's scope-token
			if c := sc[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
				return nil, spec.Invalid("scopes", "The scope %q holds a character a scope cannot: printable ASCII without spaces, quotes or backslashes.", sc)
			}
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if len(out) > MaxScopes {
		return nil, spec.Invalid("scopes", "There are %d scopes, at most %d.", len(out), MaxScopes)
	}
	return out, nil
}

// checkValues returns the claim values trimmed, each once, in their order.
func checkValues(field, what string, in []string) ([]string, error) {
	out := []string{}
	for _, raw := range in {
		v := strings.TrimSpace(raw)
		switch {
		case v == "":
			continue
		case len(v) > MaxValueLength:
			return nil, spec.Invalid(field, "The %s value %.20q... is longer than %d bytes.", what, v, MaxValueLength)
		case !utf8.ValidString(v) || hasControl(v):
			return nil, spec.Invalid(field, "The %s values must not hold control characters.", what)
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if len(out) > MaxValues {
		return nil, spec.Invalid(field, "There are %d %s values, at most %d.", len(out), what, MaxValues)
	}
	return out, nil
}

// checkInput checks every field of in but the secret, in the order of the
// form.
func checkInput(in SettingsInput, allowPrivate bool) (settingsFields, error) {
	var f settingsFields
	var err error
	if f.Issuer, err = checkIssuer(in.Issuer, allowPrivate); err != nil {
		return f, err
	}
	if f.ClientID, err = checkToken("clientId", "client id", in.ClientID, MaxClientIDLength); err != nil {
		return f, err
	}
	if in.ClientSecret != "" {
		if err := checkSecret(in.ClientSecret); err != nil {
			return f, err
		}
	}
	if f.Domains, err = checkDomains(in.Domains); err != nil {
		return f, err
	}
	if f.Scopes, err = checkScopes(in.Scopes); err != nil {
		return f, err
	}
	f.RoleClaim = DefaultRoleClaim
	if strings.TrimSpace(in.RoleClaim) != "" {
		if f.RoleClaim, err = checkToken("roleClaim", "role claim", in.RoleClaim, MaxClaimLength); err != nil {
			return f, err
		}
	}
	if f.AdministratorValues, err = checkValues("administratorValues", "Administrator", in.AdministratorValues); err != nil {
		return f, err
	}
	if f.ReviewerValues, err = checkValues("reviewerValues", "Reviewer", in.ReviewerValues); err != nil {
		return f, err
	}
	switch in.Unmapped {
	case "", UnmappedRefuse:
		f.Unmapped = UnmappedRefuse
	case UnmappedReviewer:
		f.Unmapped = UnmappedReviewer
	default:
		return f, spec.Invalid("unmapped", "Unmapped must be %q (refuse people without a mapped role) or %q (admit them as Reviewers), not %q.",
			UnmappedRefuse, UnmappedReviewer, in.Unmapped)
	}
	if len(f.AdministratorValues) == 0 && len(f.ReviewerValues) == 0 && f.Unmapped == UnmappedRefuse {
		return f, spec.Invalid("administratorValues", "Give at least one value of the %s claim that means Administrator or Reviewer; otherwise nobody could sign in.", f.RoleClaim)
	}
	return f, nil
}
