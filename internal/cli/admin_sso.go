package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/sso"
	"github.com/aiusage/kit/spec"
)

// --- admin sso

// The operator's part of an organisation's single sign-on: its
// Administrator connects the identity provider and requires it in the
// dashboard (Settings, Single sign-on); from the host, the operator reads
// the settings, turns the requirement off, or removes them, for the day the
// identity provider cannot be reached or was set wrong.

// hintSSO is added to the error of an organisation without SSO settings.
const hintSSO = "its Administrator connects an identity provider in the dashboard (Settings, Single sign-on)"

// ssoExit is the part of the admin sso commands' help about exit codes.
const ssoExit = `Exit status: 0 on success; 1 when the organisation is unknown, has no single
sign-on settings, the change is refused, or the database cannot be reached; 2
for a bad command line (a missing or malformed flag, including --database-url).`

func adminSSOCommand() *command {
	return &command{
		name:    "sso",
		summary: "show an organisation's single sign-on settings, turn its requirement off, or delete them",
		subs:    []*command{adminSSODeleteCommand(), adminSSORequireCommand(), adminSSOShowCommand()},
	}
}

// ssoJSON is an organisation's single sign-on settings as the admin sso
// commands print them: never the client secret, only whether one is stored.
type ssoJSON struct {
	OrganisationID      string       `json:"organisationId"`
	Issuer              string       `json:"issuer"`
	ClientID            string       `json:"clientId"`
	HasClientSecret     bool         `json:"hasClientSecret"`
	Domains             []string     `json:"domains"`
	Scopes              []string     `json:"scopes"`
	RoleClaim           string       `json:"roleClaim"`
	AdministratorValues []string     `json:"administratorValues"`
	ReviewerValues      []string     `json:"reviewerValues"`
	Unmapped            sso.Unmapped `json:"unmapped"`
	Required            bool         `json:"required"`
	Version             int64        `json:"version"`
	UpdatedAt           spec.Time    `json:"updatedAt"`
	// CallbackPath is the path of the redirect URI registered at the
	// identity provider, under the service's public URL.
	CallbackPath string `json:"callbackPath"`
}

// toSSOJSON returns s as the commands print it, with [] for an empty list.
func toSSOJSON(s sso.Settings) ssoJSON {
	list := func(v []string) []string {
		if v == nil {
			return []string{}
		}
		return v
	}
	return ssoJSON{
		OrganisationID: s.OrganisationID, Issuer: s.Issuer, ClientID: s.ClientID, HasClientSecret: s.HasClientSecret,
		Domains: list(s.Domains), Scopes: list(s.Scopes), RoleClaim: s.RoleClaim,
		AdministratorValues: list(s.AdministratorValues), ReviewerValues: list(s.ReviewerValues),
		Unmapped: s.Unmapped, Required: s.Required, Version: s.Version, UpdatedAt: spec.Time{Time: s.UpdatedAt},
		CallbackPath: sso.CallbackPath,
	}
}

// ssoError turns an error of the sso service about the organisation orgID
// into the command's error: no settings is a failure with hintSSO; a
// refusal (Conflict) a failure with onConflict added when it is not "";
// anything else a failure as it is.
func ssoError(cmd, orgID, onConflict string, err error) error {
	var he *spec.Error
	msg := err.Error()
	if errors.As(err, &he) && he.Detail != "" {
		msg = he.Detail
	}
	switch {
	case errors.Is(err, sso.ErrNotConfigured):
		return fmt.Errorf("%s: the organisation %s has no single sign-on settings; %s", cmd, orgID, hintSSO)
	case errors.Is(err, spec.ErrNotFound):
		return fmt.Errorf("%s: %s; %s", cmd, msg, hintSSO)
	case errors.Is(err, spec.ErrConflict) && onConflict != "":
		return fmt.Errorf("%s: %s; %s", cmd, msg, onConflict)
	case he != nil:
		return fmt.Errorf("%s: %s", cmd, msg)
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

// sso returns the single sign-on service on the database, with the people
// store it provisions into. The admin commands never reach an identity
// provider: they read and change the stored settings only.
func (d *adminDB) sso() (*sso.Service, error) {
	ring, err := d.keyring()
	if err != nil {
		return nil, err
	}
	p, err := d.people(people.Config{})
	if err != nil {
		return nil, err
	}
	s, err := sso.New(d.ctx, sso.Config{DB: d.orgs.DB(), Orgs: d.orgs, People: p, Secrets: ring,
		Now: func() time.Time { return d.now }})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.e.cmd, err)
	}
	return s, nil
}

// withSSO opens the database, checks that the organisation orgID exists
// and runs fn with the sso service.
func (f *orgFlags) withSSO(ctx context.Context, e *env, orgID string, fn func(*adminDB, *sso.Service) error) error {
	return f.withOrg(ctx, e, orgID, func(d *adminDB) error {
		s, err := d.sso()
		if err != nil {
			return err
		}
		return fn(d, s)
	})
}

// printSSO prints the single sign-on settings of the organisation orgID,
// as every admin sso command does.
func printSSO(ctx context.Context, cmd, orgID string, d *adminDB, s *sso.Service) error {
	st, err := s.Settings(ctx, orgID)
	if err != nil {
		return ssoError(cmd, orgID, "", err)
	}
	return d.print(toSSOJSON(st))
}

func adminSSOShowCommand() *command {
	f := &orgFlags{}
	return &command{
		name:    "show",
		summary: "print an organisation's single sign-on settings as JSON, never the client secret",
		long: `Prints the single sign-on (OpenID Connect) settings of the organisation --org
as one JSON object: organisationId, issuer, clientId, hasClientSecret (the
secret itself is stored encrypted and never printed), domains (the email
domains whose people sign in through the identity provider), scopes,
roleClaim, administratorValues and reviewerValues (the claim's values that
give each role), unmapped (what happens to a person the identity provider
admits without a mapped role: refuse, or Reviewer), required (whether
passwords are refused for the organisation's people), version, updatedAt,
and callbackPath (the path of the redirect URI registered at the identity
provider, under the service's public URL).

The organisation's Administrator sets them in the dashboard (Settings,
Single sign-on); an organisation without them is an error (exit 1).

` + ssoExit,
		flags: func(fs *flag.FlagSet) { f.registerOrg(fs, false) },
		run: f.readOrg(func(ctx context.Context, d *adminDB, cmd, orgID string) error {
			s, err := d.sso()
			if err != nil {
				return err
			}
			return printSSO(ctx, cmd, orgID, d, s)
		}),
	}
}

// requireOnAdvice says how "Require single sign-on" is turned on.
const requireOnAdvice = "turning it on needs an Administrator of the organisation signed in through the identity provider, in the dashboard (Settings, Single sign-on)"

func adminSSORequireCommand() *command {
	f := &struct {
		orgFlags
		off bool
	}{}
	return &command{
		name:    "require",
		summary: "turn an organisation's \"Require single sign-on\" off (--off) and print its settings as JSON",
		long: `Turns "Require single sign-on" off for the organisation --org, so that its
people may sign in with their passwords again, and prints its settings as one
JSON object, as 'admin sso show' does (required false). The change is
recorded in the organisation's audit trail (sso.required.set) with the
administrator as actor. Sessions started through the identity provider stay
open. Turning it off when it is off changes nothing.

--off is required: the operator may only turn the requirement off. Turning
it on needs an Administrator of the organisation signed in through the
identity provider, in the dashboard (Settings, Single sign-on), so that
nobody locks the organisation out with settings that do not work.

For one person locked out while the requirement stays on, see 'aiusage admin
user break-glass'.

` + ssoExit,
		flags: func(fs *flag.FlagSet) {
			f.registerOrg(fs, true)
			fs.BoolVar(&f.off, "off", false, "turn the requirement off: passwords work again for the organisation's people (required)")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID, actor, err := f.change(cmd, e, func() error {
				if !f.off {
					return usagef("%s: --off is required: the operator may only turn the requirement off; %s", cmd, requireOnAdvice)
				}
				return nil
			})
			if err != nil {
				return err
			}
			return f.withSSO(ctx, e, orgID, func(d *adminDB, s *sso.Service) error {
				if err := s.SetRequired(ctx, orgID, false, "", actor); err != nil {
					return ssoError(cmd, orgID, "", err)
				}
				return printSSO(ctx, cmd, orgID, d, s)
			})
		},
	}
}

func adminSSODeleteCommand() *command {
	f := &orgFlags{}
	return &command{
		name:    "delete",
		summary: "delete an organisation's single sign-on settings and print them as JSON",
		long: `Deletes the single sign-on settings of the organisation --org, client secret
included, and prints them as one JSON object, as 'admin sso show' showed them
last. Its people no longer sign in through the identity provider: those with
a password sign in with it; those the identity provider created have none
until an Administrator resets it ('aiusage admin user reset-password'). The
deletion is recorded in the organisation's audit trail (sso.settings.deleted)
with the administrator as actor.

Refused (exit 1) while the organisation requires single sign-on: run
'aiusage admin sso require --org ID --off' first.

` + ssoExit,
		flags: func(fs *flag.FlagSet) { f.registerOrg(fs, true) },
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID, actor, err := f.change(cmd, e)
			if err != nil {
				return err
			}
			return f.withSSO(ctx, e, orgID, func(d *adminDB, s *sso.Service) error {
				st, err := s.Settings(ctx, orgID)
				if err != nil {
					return ssoError(cmd, orgID, "", err)
				}
				offFirst := fmt.Sprintf("run 'aiusage admin sso require --org %s --off' first", orgID)
				if st.Required {
					return fmt.Errorf("%s: the organisation requires single sign-on; %s", cmd, offFirst)
				}
				if err := s.DeleteSettings(ctx, orgID, actor); err != nil {
					return ssoError(cmd, orgID, offFirst, err)
				}
				return d.print(toSSOJSON(st))
			})
		},
	}
}
