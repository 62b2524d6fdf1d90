package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/spec"
)

// Bounds of "admin user break-glass --for".
const (
	breakGlassDefault = time.Hour
	breakGlassMin     = time.Minute
	breakGlassMax     = people.MaxBreakGlass
)

// breakGlassExit is the part of the help of "admin user break-glass" about
// exit codes.
const breakGlassExit = `Exit status: 0 on success; 1 when the organisation or user is unknown, the
user is disabled, or the database cannot be reached; 2 for a bad command line
(a missing or malformed flag, including --database-url, or a --for out of
bounds).`

// breakGlassJSON is what "admin user break-glass" prints.
type breakGlassJSON struct {
	User            people.User `json:"user"`
	OneTimePassword string      `json:"oneTimePassword"`
	// Until is when the password stops signing in.
	Until spec.Time `json:"until"`
}

func adminUserBreakGlassCommand() *command {
	f := &struct {
		orgFlags
		email string
		dur   time.Duration
	}{}
	return &command{
		name:    "break-glass",
		summary: "give a user a one-time password that works even while single sign-on is required, and print it as JSON",
		long: `The operator's way into an organisation that requires single sign-on when its
identity provider is down or set wrong. Gives the user with the email --email
a new one-time password (26 random characters), printed this once, that signs
in with a password even while the user's organisation requires single
sign-on, for --for (default 1h, at least 1m, at most 24h); then ends all the
user's sessions, and prints one JSON object: {"user": USER, "oneTimePassword":
PASSWORD, "until": TIME}, the user as 'admin user list' shows it. A line on
standard error says until when the password works.

The password must be used within --for, and the user must change it at that
first sign-in, before doing anything else. Until --for has passed, the user's
password (this one, then the one they choose) signs in even while the
organisation requires single sign-on; after that, passwords are refused again
while it is required. Within that time an Administrator fixes the single
sign-on settings in the dashboard, or turns the requirement off there (or the
operator does, with 'aiusage admin sso require --org ID --off').

The email names one user in the whole service, so --org is optional; when
given, the user must be of that organisation. The user must be active. The
change is recorded in the organisation's audit trail (user.break_glass) with
the administrator as actor, never with the password.

` + breakGlassExit,
		flags: func(fs *flag.FlagSet) {
			f.register(fs, true)
			fs.StringVar(&f.org, "org", "", "`ID` of the user's organisation, a UUID; when given, the user must be of it")
			fs.StringVar(&f.email, "email", "", "`EMAIL` of the user, in any case (required)")
			fs.DurationVar(&f.dur, "for", breakGlassDefault, "how long the one-time password may be signed in with, `DURATION` such as 30m or 2h: at least 1m, at most 24h")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID := ""
			if f.org != "" {
				id, err := f.orgID(cmd)
				if err != nil {
					return err
				}
				orgID = id
			}
			if err := required(cmd, "email", f.email); err != nil {
				return err
			}
			if f.dur < breakGlassMin || f.dur > breakGlassMax {
				return usagef("%s: --for must be at least %s and at most %s, got %s", cmd, fmtDuration(breakGlassMin), fmtDuration(breakGlassMax), f.dur)
			}
			actor, err := f.actorOf(cmd, e)
			if err != nil {
				return err
			}
			password, now := people.NewOneTimePassword(), time.Now()
			until := now.Add(f.dur).Truncate(time.Millisecond) // as stored
			return f.withDB(ctx, e, now, func(d *adminDB) error {
				s, err := d.people(people.Config{OneTimePasswordTTL: f.dur})
				if err != nil {
					return err
				}
				if orgID != "" {
					if _, err := d.orgs.Organisation(ctx, orgID); err != nil {
						return storeError(cmd, "org", hintOrgs, err)
					}
				}
				email := strings.ToLower(strings.TrimSpace(f.email))
				u, err := s.UserByEmail(ctx, f.email)
				if err == nil && orgID != "" && u.OrganisationID != orgID {
					err = httpx.FieldError(spec.ErrNotFound, fmt.Sprintf("No user with email %s in this organisation.", email), "email", "no such user in this organisation")
				}
				if err == nil {
					u, err = s.BreakGlass(ctx, u.OrganisationID, u.ID, password, until, actor)
				}
				if err != nil {
					return peopleError(cmd, "'aiusage admin user list --org ID' lists an organisation's users, 'aiusage admin org list' the organisations", err)
				}
				if err := d.print(breakGlassJSON{User: u, OneTimePassword: password, Until: spec.Time{Time: until}}); err != nil {
					return err
				}
				fmt.Fprintf(e.stderr, "aiusage: %s: the one-time password is shown only this once; %s may sign in with it until %s, even while single sign-on is required, and must change it at sign-in\n",
					cmd, u.Email, spec.Time{Time: until})
				return nil
			})
		},
	}
}

// fmtDuration writes d without its zero units: 1m, 24h.
func fmtDuration(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	return strings.TrimSuffix(s, "0m")
}
