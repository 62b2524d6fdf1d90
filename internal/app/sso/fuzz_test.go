package sso

import (
	"slices"
	"strings"
	"testing"
)

// FuzzSettingsInput checks that no input panics the checks, and that
// accepted settings are normalised.
func FuzzSettingsInput(f *testing.F) {
	f.Add("https://idp.example.com", "client", "example.com, Example.ORG\n@a.example.com", "openid email", "groups", "admins", "reviewers", "")
	f.Add("http://127.0.0.1:8080/oidc", "c", "bad domain", "\"", "", "", "", "Reviewer")
	f.Add("https://u:p@x/?q#f", " ", "-a.com", "openid", "a b", "\x00", "r", "refuse")
	f.Add("", "", "", "", "", "", "", "Owner")
	f.Fuzz(func(t *testing.T, issuer, client, domains, scopes, claim, admins, reviewers, unmapped string) {
		for _, private := range []bool{false, true} {
			in := SettingsInput{Issuer: issuer, ClientID: client, Domains: SplitList(domains), Scopes: SplitList(scopes), RoleClaim: claim,
				AdministratorValues: strings.Split(admins, ","), ReviewerValues: strings.Split(reviewers, ","), Unmapped: Unmapped(unmapped)}
			got, err := checkInput(in, private)
			if err != nil {
				continue
			}
			if !strings.HasPrefix(got.Issuer, "https://") && !(private && strings.HasPrefix(got.Issuer, "http://")) {
				t.Fatalf("issuer %q accepted", got.Issuer)
			}
			if len(got.Domains) == 0 || !slices.IsSorted(got.Domains) || len(slices.Compact(slices.Clone(got.Domains))) != len(got.Domains) {
				t.Fatalf("domains %q not normalised", got.Domains)
			}
			for _, d := range got.Domains {
				if back, err := CheckDomain(d); err != nil || back != d {
					t.Fatalf("domain %q does not check again: %v", d, err)
				}
			}
			if got.Scopes[0] != "openid" {
				t.Fatalf("scopes %q do not start with openid", got.Scopes)
			}
			if got.Unmapped != UnmappedRefuse && got.Unmapped != UnmappedReviewer {
				t.Fatalf("unmapped %q", got.Unmapped)
			}
		}
	})
}

// FuzzClaimValues checks the role mapping of any claim value.
func FuzzClaimValues(f *testing.F) {
	f.Add("admins", "reviewers", "admins")
	f.Add("a", "b", "")
	f.Fuzz(func(t *testing.T, admin, reviewer, value string) {
		st := Settings{AdministratorValues: []string{admin}, ReviewerValues: []string{reviewer}, Unmapped: UnmappedRefuse}
		for _, v := range []any{value, []any{value, 3, nil}, nil, 4.5, map[string]any{}} {
			values, present := ClaimValues(v)
			role, reason := MapRole(st, values, present)
			if (role == "") == (reason == "") {
				t.Fatalf("role %q and reason %q for %v", role, reason, v)
			}
			if strings.TrimSpace(value) == admin && admin != "" && present && v != nil {
				if _, ok := v.(string); ok && role != "Administrator" {
					t.Fatalf("value %q of the Administrator values gives %q", value, role)
				}
			}
		}
	})
}
