package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/spec"
)

// --- admin user

const hintUsers = "'aiusage admin user list --org ID' lists an organisation's users"

// userExit is the part of the admin user commands' help about exit codes.
const userExit = `Exit status: 0 on success; 1 when the organisation or user is unknown, the
email is taken, or the database cannot be reached; 2 for a bad command line (a
missing or malformed flag, including --database-url, or a password too short
or too long).`

func adminUserCommand() *command {
	return &command{
		name:    "user",
		summary: "create, list and disable the people who sign in to the dashboard, and reset their passwords",
		subs: []*command{adminUserBreakGlassCommand(), adminUserCreateCommand(), adminUserDisableCommand(), adminUserListCommand(),
			adminUserResetPasswordCommand()},
	}
}

// userFieldFlags are the flags that give the fields of a user.
var userFieldFlags = map[string]string{
	"organisationId": "org",
	"email":          "email",
	"name":           "name",
	"role":           "role",
	"password":       "password-stdin",
}

// peopleError turns an error of the people store into the command's error:
// an invalid field is a usage error naming its flag; an unknown
// organisation or user is a failure with hint; anything else (an email
// taken, an unreachable database) is a failure.
func peopleError(cmd, hint string, err error) error {
	var he *spec.Error
	if errors.As(err, &he) && len(he.Fields) == 1 {
		f := he.Fields[0]
		flagName, ok := userFieldFlags[f.Field]
		switch {
		case errors.Is(err, spec.ErrInvalid) && ok:
			return usagef("%s: --%s: the %s %s", cmd, flagName, f.Field, f.Message)
		case errors.Is(err, spec.ErrNotFound) && hint != "":
			return fmt.Errorf("%s: %s; %s", cmd, he.Detail, hint)
		default:
			return fmt.Errorf("%s: %s", cmd, he.Detail)
		}
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

// readPassword reads the password from r: its first line, without the line
// break. It reads at most what a password may hold, so that a stream
// without a line break is refused rather than read to its end.
func readPassword(cmd string, r io.Reader) (string, error) {
	br := bufio.NewReader(io.LimitReader(r, people.MaxPasswordBytes+2)) // and "\r\n"
	line, err := br.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%s: --password-stdin: read standard input: %w", cmd, err)
	}
	if errors.Is(err, io.EOF) && len(line) == people.MaxPasswordBytes+2 {
		return "", usagef("%s: --password-stdin: the password is more than %d bytes", cmd, people.MaxPasswordBytes)
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	switch n := utf8.RuneCountInString(line); {
	case line == "":
		return "", usagef("%s: --password-stdin: standard input holds no password (its first line is the password)", cmd)
	case n < people.MinPasswordLength:
		return "", usagef("%s: --password-stdin: the password is %d characters, at least %d", cmd, n, people.MinPasswordLength)
	case len(line) > people.MaxPasswordBytes:
		return "", usagef("%s: --password-stdin: the password is %d bytes, at most %d", cmd, len(line), people.MaxPasswordBytes)
	}
	return line, nil
}

func adminUserCreateCommand() *command {
	f := &struct {
		orgFlags
		email, name, role string
		passwordStdin     bool
	}{}
	return &command{
		name:    "create",
		summary: "create a person who signs in to the dashboard and print it as JSON",
		long: `Creates a user of the organisation --org, who signs in to the dashboard with
the email and the password, and prints it as one JSON object: id,
organisationId, email, name, role, createdAt and disabledAt (null). This is how
the first Administrator of an organisation is made; Administrators then manage
the organisation's people in the dashboard.

The password is read from standard input, never from the command line (where
other users of the machine could see it): its first line, without the line
break. It must be at least 12 characters and at most 1,024 bytes. The service
keeps only its argon2id hash, which is never printed.

The password is the user's own, not one-time: it is for the operator's first
Administrator. To give someone else an account, invite them in the dashboard,
or run 'aiusage admin user reset-password' after this to hand over a one-time
password they must change.

The email is trimmed and lowercased, and names one user in the whole service.
The role is Administrator (manages the organisation's people, keys, agents and
instructions) or Reviewer (decides the review tasks waiting for a person). The
name defaults to the part of the email before the @. The creation is recorded
in the organisation's audit trail.

` + userExit,
		flags: func(fs *flag.FlagSet) {
			f.registerOrg(fs, true)
			fs.StringVar(&f.email, "email", "", "`EMAIL` the user signs in with, such as alice@example.com (required)")
			fs.StringVar(&f.role, "role", "", "`ROLE` of the user: Administrator or Reviewer (required)")
			fs.StringVar(&f.name, "name", "", "`NAME` of the user, 1 to 200 characters (default: the part of the email before the @)")
			fs.BoolVar(&f.passwordStdin, "password-stdin", false, "read the password from the first line of standard input (required)")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID, err := f.orgID(cmd)
			if err != nil {
				return err
			}
			if err := required(cmd, "email", f.email); err != nil {
				return err
			}
			if err := required(cmd, "role", f.role); err != nil {
				return err
			}
			role, err := people.ParseRole(f.role)
			if err != nil {
				return usagef("%s: --role: %v", cmd, err)
			}
			if !f.passwordStdin {
				return usagef("%s: --password-stdin is required: the password is read from standard input, as in: printf '%%s\\n' \"$PASSWORD\" | aiusage %s ... --password-stdin", cmd, cmd)
			}
			actor, err := f.actorOf(cmd, e)
			if err != nil {
				return err
			}
			password, err := readPassword(cmd, e.stdin)
			if err != nil {
				return err
			}
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				s, err := d.people(people.Config{})
				if err != nil {
					return err
				}
				u, err := s.CreateUser(ctx, people.UserCreate{OrganisationID: orgID, Email: f.email, Name: f.name, Role: role, Password: password}, actor)
				if err != nil {
					return peopleError(cmd, hintOrgs, err)
				}
				return d.print(u)
			})
		},
	}
}

func adminUserListCommand() *command {
	f := &orgFlags{}
	return &command{
		name:    "list",
		summary: `list an organisation's users as JSON: {"organisationId", "users": [...]}`,
		long: `Prints the users of the organisation --org, oldest first, disabled ones
included, as one JSON object: {"organisationId": ID, "users": [...]}, each
user with id, organisationId, email, name, role, createdAt and disabledAt
(null while active).

` + userExit,
		flags: func(fs *flag.FlagSet) { f.registerOrg(fs, false) },
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID, err := f.orgID(cmd)
			if err != nil {
				return err
			}
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				s, err := d.people(people.Config{})
				if err != nil {
					return err
				}
				users, err := s.Users(ctx, orgID)
				if err != nil {
					return peopleError(cmd, hintOrgs, err)
				}
				return d.print(struct {
					OrganisationID string        `json:"organisationId"`
					Users          []people.User `json:"users"`
				}{orgID, users})
			})
		},
	}
}

func adminUserDisableCommand() *command {
	f := &struct {
		orgFlags
		email string
	}{}
	return &command{
		name:    "disable",
		summary: "disable a user at once, ending its sessions, and print it as JSON",
		long: `Disables the user with the email --email of the organisation --org and prints
it as one JSON object, as 'admin user list' shows it (disabledAt set). Its
sessions end at once: its next request in the dashboard is refused, and it can
no longer sign in. The user stays listed, and its changes stay in the audit
trail under its name. Disabling a disabled user changes nothing.

` + userExit,
		flags: func(fs *flag.FlagSet) {
			f.registerOrg(fs, true)
			fs.StringVar(&f.email, "email", "", "`EMAIL` of the user, in any case (required)")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID, err := f.orgID(cmd)
			if err != nil {
				return err
			}
			if err := required(cmd, "email", f.email); err != nil {
				return err
			}
			actor, err := f.actorOf(cmd, e)
			if err != nil {
				return err
			}
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				o := d.orgs
				s, err := d.people(people.Config{})
				if err != nil {
					return err
				}
				if _, err := o.Organisation(ctx, orgID); err != nil {
					return storeError(cmd, "org", hintOrgs, err)
				}
				u, err := s.DisableUser(ctx, orgID, f.email, actor)
				if err != nil {
					return peopleError(cmd, hintUsers, err)
				}
				return d.print(u)
			})
		},
	}
}

func adminUserResetPasswordCommand() *command {
	f := &struct {
		orgFlags
		inviteTTLFlag
		email         string
		passwordStdin bool
	}{}
	return &command{
		name:    "reset-password",
		summary: "give a user a new password, ending its sessions, and print it as JSON",
		long: `Gives the user with the email --email of the organisation --org a new
password and ends all its sessions at once, then prints one JSON object:
{"user": USER, "oneTimePassword": PASSWORD}, the user as 'admin user list'
shows it.

By default the password is a new one-time password (26 random characters),
printed this once: the user signs in with it within --invite-ttl (default
72h) and must then choose their own before doing anything else; past it,
the user is told to ask an Administrator for a new one. Administrators do the
same in the dashboard (Users, "Reset password").

With --password-stdin, the password is read from standard input (its first
line; at least 12 characters) and is the user's to keep, not one-time, and
"oneTimePassword" is left out: the operator's way back into an account, such
as the last Administrator's.

The user must be active (a disabled user cannot sign in). The reset is
recorded in the organisation's audit trail (user.password_reset), never with
the password.

` + userExit,
		flags: func(fs *flag.FlagSet) {
			f.registerOrg(fs, true)
			f.inviteTTLFlag.register(fs)
			fs.StringVar(&f.email, "email", "", "`EMAIL` of the user, in any case (required)")
			fs.BoolVar(&f.passwordStdin, "password-stdin", false, "read the new password from the first line of standard input; it is not one-time")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID, err := f.orgID(cmd)
			if err != nil {
				return err
			}
			if err := required(cmd, "email", f.email); err != nil {
				return err
			}
			if err := f.check(cmd); err != nil {
				return err
			}
			actor, err := f.actorOf(cmd, e)
			if err != nil {
				return err
			}
			password, oneTime := people.NewOneTimePassword(), true
			if f.passwordStdin {
				if password, err = readPassword(cmd, e.stdin); err != nil {
					return err
				}
				oneTime = false
			}
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				o := d.orgs
				s, err := d.people(people.Config{OneTimePasswordTTL: f.inviteTTL})
				if err != nil {
					return err
				}
				if _, err := o.Organisation(ctx, orgID); err != nil {
					return storeError(cmd, "org", hintOrgs, err)
				}
				u, err := s.UserByEmail(ctx, f.email)
				if err == nil && u.OrganisationID != orgID {
					err = httpx.FieldError(spec.ErrNotFound, fmt.Sprintf("No user with email %s in this organisation.", strings.ToLower(strings.TrimSpace(f.email))), "email", "no such user in this organisation")
				}
				if err == nil {
					u, err = s.ResetPassword(ctx, orgID, u.ID, password, oneTime, actor)
				}
				if err != nil {
					return peopleError(cmd, hintUsers, err)
				}
				out := struct {
					User            people.User `json:"user"`
					OneTimePassword string      `json:"oneTimePassword,omitempty"`
				}{User: u}
				if oneTime {
					out.OneTimePassword = password
				}
				return d.print(out)
			})
		},
	}
}
