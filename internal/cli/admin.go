package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/spec"
)

// The admin commands are what a person holding the Administrator role does
// outside the organisation API: create organisations, agents, API keys and
// the people who sign in to the dashboard, revoke keys, disable people, read
// the audit trail. They work on the service's database
// directly (opening and migrating it like "service serve"), print one JSON
// object on standard output (audit: one per line) and errors on standard
// error.

// auditBatch is how many audit records "admin audit" reads per query.
const auditBatch = 1000

// adminExit is the part of every admin command's help about exit codes.
const adminExit = `Exit status: 0 on success; 1 when the organisation or key is unknown or the
database cannot be reached; 2 for a bad command line (a missing or malformed
flag, including --database-url).`

func adminCommand() *command {
	return &command{
		name:    "admin",
		summary: "administer the service's database: organisations, agents, API keys, people, single sign-on, audit trail",
		subs: []*command{adminAgentCommand(), adminAuditCommand(), adminKeyCommand(), adminOrgCommand(), adminReviewCommand(),
			adminRotateSecretKeyCommand(), adminSourceCommand(), adminSSOCommand(), adminUserCommand()},
	}
}

// adminFlags are the flags every admin command takes.
type adminFlags struct {
	databaseURL, actor string
	secrets            secretFlags
}

// register declares --database-url and --actor on fs. changes says whether
// the command changes anything, and so records its actor.
func (a *adminFlags) register(fs *flag.FlagSet, changes bool) {
	fs.StringVar(&a.databaseURL, "database-url", defaultServiceDB, "database `URL` of the service: sqlite:PATH, sqlite::memory: or postgres://...")
	usage := "`NAME` of the administrator, recorded in the audit trail with the change (default: $USER, else admin)"
	if !changes {
		usage = "`NAME` of the administrator (default: $USER, else admin); accepted by every admin command, unused here since nothing changes"
	}
	fs.StringVar(&a.actor, "actor", "", usage)
	a.secrets.register(fs)
}

// actorOf returns who the audit trail records for the changes of the
// command: --actor, else $USER, else "admin". A name that is not 1 to
// orgapi.MaxNameLength characters of UTF-8 without control characters is a
// usage error naming --actor.
func (a *adminFlags) actorOf(cmd string, e *env) (org.Actor, error) {
	name, from := strings.TrimSpace(a.actor), "--actor"
	if name == "" {
		name, from = strings.TrimSpace(e.getenv("USER")), "$USER (the default of --actor)"
	}
	if name == "" {
		name = "admin"
	}
	switch {
	case !utf8.ValidString(name):
		return org.Actor{}, usagef("%s: %s must be UTF-8", cmd, from)
	case utf8.RuneCountInString(name) > org.MaxNameLength:
		return org.Actor{}, usagef("%s: %s is %d characters, at most %d", cmd, from, utf8.RuneCountInString(name), org.MaxNameLength)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return org.Actor{}, usagef("%s: %s must not hold control characters", cmd, from)
	}
	return org.Actor{Type: org.ActorAdmin, Name: name}, nil
}

// required refuses an empty required flag.
func required(cmd, flagName, v string) error {
	if v == "" {
		return usagef("%s: --%s is required", cmd, flagName)
	}
	return nil
}

// parseID returns the UUID given to --flagName in lowercase. Any case is
// accepted; anything but the hyphenated 8-4-4-4-12 form is a usage error
// naming the flag.
func parseID(cmd, flagName, v string) (string, error) {
	if err := required(cmd, flagName, v); err != nil {
		return "", err
	}
	u, err := uuid.Parse(v)
	if err != nil || len(v) != 36 {
		return "", usagef("%s: --%s must be a UUID such as 0b7e4a4c-5f0e-4d3e-9a51-2f6c1d2b3a4e, got %q", cmd, flagName, v)
	}
	return u.String(), nil
}

// storeError turns an error of the store into the command's error. ErrInvalid
// is a usage error naming flagName (the only input the store checks that the
// command does not check first); anything else, such as ErrNotFound or an
// unreachable database, is a failure, with hint added to ErrNotFound.
func storeError(cmd, flagName, hint string, err error) error {
	switch {
	case errors.Is(err, spec.ErrInvalid):
		return usagef("%s: --%s: %v", cmd, flagName, err)
	case errors.Is(err, spec.ErrNotFound) && hint != "":
		return fmt.Errorf("%s: %w; %s", cmd, err, hint)
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

// Hints added to "not found" errors.
const (
	hintOrgs = "'aiusage admin org list' lists the organisations"
	hintKeys = "'aiusage admin key list --org ID' lists an organisation's keys"
)

// writeJSONLine writes v as one line of compact JSON.
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// --- admin org

func adminOrgCommand() *command {
	return &command{
		name:    "org",
		summary: "create, update and list organisations",
		subs:    []*command{adminOrgCreateCommand(), adminOrgUpdateCommand(), adminOrgListCommand()},
	}
}

// orgCreateFlags are the flags of "admin org create".
type orgCreateFlags struct {
	adminFlags
	name, plan  string
	hourlyLimit int
}

func adminOrgCreateCommand() *command {
	f := &orgCreateFlags{}
	return &command{
		name:    "create",
		summary: "create an organisation and print it as JSON",
		long: `Creates an organisation and prints it as one JSON object: id, name, plan,
hourlyLimit (enterprise only) and createdAt. Use its id as --org of the other
admin commands; the organisation API shows an API key its id and name.

The plan decides the organisation's hourly request limit on the review-task
API, shared by all its keys and counted in a sliding hour: standard 1,000,
business 10,000, enterprise as set by --hourly-limit, which is required with
enterprise and refused with the others.

` + adminExit,
		flags: func(fs *flag.FlagSet) {
			f.register(fs, true)
			fs.StringVar(&f.name, "name", "", "`NAME` of the organisation, 1 to 200 characters (required)")
			fs.StringVar(&f.plan, "plan", string(org.PlanStandard), "`PLAN`: standard, business or enterprise")
			fs.IntVar(&f.hourlyLimit, "hourly-limit", 0, "hourly request limit `N` of the organisation (all its keys) on the enterprise plan (required with --plan enterprise, refused otherwise)")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			n, err := f.newOrganisation(cmd)
			if err != nil {
				return err
			}
			actor, err := f.actorOf(cmd, e)
			if err != nil {
				return err
			}
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				s := d.orgs
				o, err := s.CreateOrganisation(ctx, n, actor)
				if err != nil {
					return storeError(cmd, "name", "", err)
				}
				return d.print(o)
			})
		},
	}
}

// newOrganisation checks the flags of "admin org create".
func (f *orgCreateFlags) newOrganisation(cmd string) (org.OrganisationCreate, error) {
	if err := required(cmd, "name", f.name); err != nil {
		return org.OrganisationCreate{}, err
	}
	plan, err := org.ParsePlan(f.plan)
	if err != nil {
		return org.OrganisationCreate{}, usagef("%s: --plan: %v", cmd, err)
	}
	switch {
	case plan == org.PlanEnterprise && f.hourlyLimit == 0:
		return org.OrganisationCreate{}, usagef("%s: --hourly-limit is required with --plan enterprise (requests an hour for the organisation, at least 1)", cmd)
	case plan == org.PlanEnterprise && f.hourlyLimit < 1:
		return org.OrganisationCreate{}, usagef("%s: --hourly-limit must be at least 1, got %d", cmd, f.hourlyLimit)
	case plan != org.PlanEnterprise && f.hourlyLimit != 0:
		return org.OrganisationCreate{}, usagef("%s: --hourly-limit is only for --plan enterprise; the %s plan's limit is fixed at %d requests an hour for the organisation",
			cmd, plan, org.Organisation{Plan: plan}.RateLimit())
	}
	return org.OrganisationCreate{Name: f.name, Plan: plan, HourlyLimit: f.hourlyLimit}, nil
}

func adminOrgListCommand() *command {
	f := &adminFlags{}
	return &command{
		name:    "list",
		summary: `list every organisation as JSON: {"organisations": [...]}`,
		long: `Prints every organisation of the service, oldest first, as one JSON object:
{"organisations": [{"id", "name", "plan", "hourlyLimit", "createdAt"}, ...]}.

` + adminExit,
		flags: func(fs *flag.FlagSet) { f.register(fs, false) },
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				s := d.orgs
				orgs, err := s.Organisations(ctx)
				if err != nil {
					return storeError(cmd, "", "", err)
				}
				return d.print(struct {
					Organisations []org.Organisation `json:"organisations"`
				}{orgs})
			})
		},
	}
}

// --- admin agent

func adminAgentCommand() *command {
	return &command{
		name:    "agent",
		summary: "create and list an organisation's agents",
		subs:    []*command{adminAgentCreateCommand(), adminAgentListCommand()},
	}
}

// agentJSON is an agent as the admin commands print it: the organisation
// API's agent plus its organisation.
type agentJSON struct {
	spec.Agent
	OrganisationID string `json:"organisationId"`
}

// orgFlags are the flags of an admin command about one organisation.
type orgFlags struct {
	adminFlags
	org string
}

// registerOrg declares the flags of orgFlags on fs.
func (f *orgFlags) registerOrg(fs *flag.FlagSet, changes bool) {
	f.register(fs, changes)
	fs.StringVar(&f.org, "org", "", "`ID` of the organisation, a UUID as 'admin org create' printed it (required)")
}

// orgID returns --org, checked and in lowercase.
func (f *orgFlags) orgID(cmd string) (string, error) { return parseID(cmd, "org", f.org) }

// change checks the flags of a command that changes the organisation
// --org, in the order its errors are reported: --org, then checks (the
// command's own flags), then the actor. It returns --org and the actor.
func (f *orgFlags) change(cmd string, e *env, checks ...func() error) (string, org.Actor, error) {
	orgID, err := f.orgID(cmd)
	if err != nil {
		return "", org.Actor{}, err
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return "", org.Actor{}, err
		}
	}
	actor, err := f.actorOf(cmd, e)
	if err != nil {
		return "", org.Actor{}, err
	}
	return orgID, actor, nil
}

// readOrg returns the run of a command that reads about the organisation
// --org: it checks --org, opens the database, finds the organisation (see
// withOrg) and calls fn.
func (f *orgFlags) readOrg(fn func(ctx context.Context, d *adminDB, cmd, orgID string) error) func(context.Context, *env, *flag.FlagSet, []string) error {
	return func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
		orgID, err := f.orgID(e.cmd)
		if err != nil {
			return err
		}
		return f.withOrg(ctx, e, orgID, func(d *adminDB) error { return fn(ctx, d, e.cmd, orgID) })
	}
}

// withOrg opens the database and runs fn once the organisation orgID is
// found; an unknown one is an error with hintOrgs.
func (f *orgFlags) withOrg(ctx context.Context, e *env, orgID string, fn func(*adminDB) error) error {
	return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
		if _, err := d.orgs.Organisation(ctx, orgID); err != nil {
			return storeError(e.cmd, "org", hintOrgs, err)
		}
		return fn(d)
	})
}

func adminAgentCreateCommand() *command {
	f := &struct {
		orgFlags
		name string
	}{}
	return &command{
		name:    "create",
		summary: "create a data-protection agent of an organisation and print it as JSON",
		long: `Creates an agent (of type DataProtection) of the organisation --org and prints
it as one JSON object: id, name, type, instructionCount and organisationId.
Its id is what instructions name in usedBy; GET /organisations/{id}/agents
lists the agents over the organisation API.

` + adminExit,
		flags: func(fs *flag.FlagSet) {
			f.registerOrg(fs, true)
			fs.StringVar(&f.name, "name", "", "`NAME` of the agent, 1 to 200 characters (required)")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID, actor, err := f.change(cmd, e, func() error { return required(cmd, "name", f.name) })
			if err != nil {
				return err
			}
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				s := d.orgs
				a, err := s.CreateAgent(ctx, orgID, f.name, actor)
				if err != nil {
					return storeError(cmd, "name", hintOrgs, err)
				}
				return d.print(agentJSON{a, orgID})
			})
		},
	}
}

func adminAgentListCommand() *command {
	f := &orgFlags{}
	return &command{
		name:    "list",
		summary: `list an organisation's agents as JSON: {"organisationId", "agents": [...]}`,
		long: `Prints the agents of the organisation --org, oldest first, as one JSON object:
{"organisationId": ID, "agents": [{"id", "name", "type", "instructionCount"}, ...]}.

` + adminExit,
		flags: func(fs *flag.FlagSet) { f.registerOrg(fs, false) },
		run: f.readOrg(func(ctx context.Context, d *adminDB, cmd, orgID string) error {
			agents, err := d.orgs.Agents(ctx, orgID)
			if err != nil {
				return storeError(cmd, "org", "", err)
			}
			return d.print(struct {
				OrganisationID string       `json:"organisationId"`
				Agents         []spec.Agent `json:"agents"`
			}{orgID, agents})
		}),
	}
}

// --- admin key

func adminKeyCommand() *command {
	return &command{
		name:    "key",
		summary: "create, list and revoke an organisation's API keys",
		subs:    []*command{adminKeyCreateCommand(), adminKeyListCommand(), adminKeyRevokeCommand()},
	}
}

// keyJSON is a key as "admin key list" and "admin key revoke" print it: never
// the secret, and the key's status now.
type keyJSON struct {
	org.APIKey
	// Status is active, expired or revoked.
	Status string `json:"status"`
}

// keyCreateFlags are the flags of "admin key create".
type keyCreateFlags struct {
	orgFlags
	name, typ, expires string
	noExpiry           bool
}

func adminKeyCreateCommand() *command {
	f := &keyCreateFlags{}
	return &command{
		name:    "create",
		summary: "create an API key of an organisation and print it, with its secret, as JSON",
		long: `Creates an API key of the organisation --org and prints it as one JSON object:
id, organisationId, name, type, last4, createdAt, expiresAt (null: valid until
revoked), revokedAt and secret. The secret is shown this once: the service
keeps only its hash, and listings show its last four characters. A warning
saying so goes to standard error.

Only keys of type API may use the organisation API (an Ingestion key gets
403); the type defaults to Ingestion, as the organisation API document says.
The key expires one year ahead unless --expires gives another time (RFC 3339,
any offset, in the future) or --no-expiry makes it valid until revoked.
Changes made with the key are recorded in the audit trail under its name.

` + adminExit,
		flags: func(fs *flag.FlagSet) {
			f.registerOrg(fs, true)
			fs.StringVar(&f.name, "name", "", "`NAME` of the key, 1 to 200 characters; the audit trail records changes made with the key under it (required)")
			fs.StringVar(&f.typ, "type", string(org.KeyTypeIngestion), "`TYPE` of the key: API (for the organisation API) or Ingestion")
			fs.StringVar(&f.expires, "expires", "", "expiry `TIME`, RFC 3339 such as 2027-01-31T00:00:00Z or 2027-01-31T09:00:00+09:00 (default one year ahead)")
			fs.BoolVar(&f.noExpiry, "no-expiry", false, "no expiry: the key is valid until revoked")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			now := time.Now()
			n, err := f.newKey(cmd, now)
			if err != nil {
				return err
			}
			actor, err := f.actorOf(cmd, e)
			if err != nil {
				return err
			}
			return f.withDB(ctx, e, now, func(d *adminDB) error {
				s := d.orgs
				k, err := s.CreateKey(ctx, n, actor)
				if err != nil {
					return storeError(cmd, "name", hintOrgs, err)
				}
				if err := d.print(k); err != nil {
					return err
				}
				fmt.Fprintf(e.stderr, "aiusage: %s: the secret is shown only this once; store it now, it cannot be retrieved later\n", cmd)
				return nil
			})
		},
	}
}

// newKey checks the flags of "admin key create" at now.
func (f *keyCreateFlags) newKey(cmd string, now time.Time) (org.KeyCreate, error) {
	orgID, err := f.orgID(cmd)
	if err != nil {
		return org.KeyCreate{}, err
	}
	if err := required(cmd, "name", f.name); err != nil {
		return org.KeyCreate{}, err
	}
	typ, err := org.ParseKeyType(f.typ)
	if err != nil {
		return org.KeyCreate{}, usagef("%s: --type: %v", cmd, err)
	}
	expires, err := parseExpiry(cmd, f.expires, f.noExpiry, now)
	if err != nil {
		return org.KeyCreate{}, err
	}
	return org.KeyCreate{OrganisationID: orgID, Name: f.name, Type: typ, ExpiresAt: expires, NoExpiry: f.noExpiry}, nil
}

// parseExpiry returns the expiry of a new key: none with --no-expiry, the
// default (orgapi.DefaultExpiry) without --expires, else --expires, which
// must be RFC 3339 and after now.
func parseExpiry(cmd, expires string, noExpiry bool, now time.Time) (*time.Time, error) {
	switch {
	case expires != "" && noExpiry:
		return nil, usagef("%s: give --expires or --no-expiry, not both", cmd)
	case noExpiry:
		return nil, nil
	case expires == "":
		t := org.DefaultExpiry(now)
		return &t, nil
	}
	t, err := time.Parse(time.RFC3339, expires)
	if err != nil {
		return nil, usagef("%s: --expires must be an RFC 3339 time such as 2027-01-31T00:00:00Z or 2027-01-31T09:00:00+09:00, got %q", cmd, expires)
	}
	if !t.After(now) {
		return nil, usagef("%s: --expires %s is in the past; a key must expire in the future (or use --no-expiry)", cmd, expires)
	}
	return &t, nil
}

func adminKeyListCommand() *command {
	f := &orgFlags{}
	return &command{
		name:    "list",
		summary: `list an organisation's API keys as JSON: {"organisationId", "keys": [...]}`,
		long: `Prints the API keys of the organisation --org, oldest first, revoked and
expired ones included, as one JSON object: {"organisationId": ID, "keys": [...]},
each key with id, organisationId, name, type, last4 (the last four characters
of its secret, which is never shown again), createdAt, expiresAt, revokedAt and
status (active, expired or revoked).

` + adminExit,
		flags: func(fs *flag.FlagSet) { f.registerOrg(fs, false) },
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID, err := f.orgID(cmd)
			if err != nil {
				return err
			}
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				s := d.orgs
				keys, err := s.Keys(ctx, orgID)
				if err != nil {
					return storeError(cmd, "org", hintOrgs, err)
				}
				now := s.Now()
				out := make([]keyJSON, 0, len(keys))
				for _, k := range keys {
					out = append(out, keyJSON{k, k.Status(now)})
				}
				return d.print(struct {
					OrganisationID string    `json:"organisationId"`
					Keys           []keyJSON `json:"keys"`
				}{orgID, out})
			})
		},
	}
}

func adminKeyRevokeCommand() *command {
	f := &struct {
		orgFlags
		key string
	}{}
	return &command{
		name:    "revoke",
		summary: "revoke an API key at once and print it as JSON",
		long: `Revokes the key --key of the organisation --org and prints it as one JSON
object, as 'admin key list' shows it (status revoked). Every service process
on the database refuses the key with 401 within 5 seconds (the time a process
reuses a key's check; the dashboard's revocation has effect on the next
request). Revocation cannot be undone; revoking a revoked key changes
nothing. To rotate a key, create the replacement, deploy it, then revoke the
old one.

` + adminExit,
		flags: func(fs *flag.FlagSet) {
			f.registerOrg(fs, true)
			fs.StringVar(&f.key, "key", "", "`ID` of the key, a UUID as 'admin key list' shows it (required)")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			var key string
			orgID, actor, err := f.change(cmd, e, func() (err error) {
				key, err = parseID(cmd, "key", f.key)
				return err
			})
			if err != nil {
				return err
			}
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				s := d.orgs
				k, err := s.RevokeKey(ctx, orgID, key, actor)
				if err != nil {
					return storeError(cmd, "key", hintKeys, err)
				}
				return d.print(keyJSON{k, k.Status(s.Now())})
			})
		},
	}
}

// --- admin audit

func adminAuditCommand() *command {
	f := &struct {
		orgFlags
		after int64
	}{}
	return &command{
		name:    "audit",
		summary: "print an organisation's audit trail as NDJSON, oldest first",
		long: `Prints the audit trail of the organisation --org as NDJSON: one JSON object
per line and per change, oldest first, with seq, organisationId, at, actor
({"type": "apiKey", "id", "name"} for a change made with an API key,
{"type": "admin", "name"} for an admin command, {"type": "user", "id", "name"}
for a person signed in to the dashboard, {"type": "identityProvider", "name":
ISSUER} for a change an organisation's identity provider made at a sign-in),
action (organisation.created, agent.created, key.created, key.revoked,
instruction.created, instruction.updated, instruction.deleted, user.created,
user.role_changed, user.disabled, user.break_glass, sso.settings.set,
sso.settings.deleted, sso.required.set, sso.signed_in, sso.refused,
sso.session_ended, among others), resourceType, resourceId, and the resource
before and after the change (null before a creation and after a deletion).
--after SEQ prints only the records after that one, to follow the trail.

` + adminExit,
		flags: func(fs *flag.FlagSet) {
			f.registerOrg(fs, false)
			fs.Int64Var(&f.after, "after", 0, "print only the records with a seq above `SEQ`")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID, err := f.orgID(cmd)
			if err != nil {
				return err
			}
			if f.after < 0 {
				return usagef("%s: --after must not be negative, got %d", cmd, f.after)
			}
			return f.withOrg(ctx, e, orgID, func(d *adminDB) error {
				return writeAudit(ctx, e.stdout, d.orgs, orgID, f.after)
			})
		},
	}
}

// writeAudit writes the audit records of org after seq to w as NDJSON,
// reading them auditBatch at a time.
func writeAudit(ctx context.Context, w io.Writer, s *org.Store, orgID string, after int64) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for {
		recs, err := s.Audit(ctx, orgID, after, auditBatch)
		if err != nil {
			return fmt.Errorf("admin audit: %w", err)
		}
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		if len(recs) < auditBatch {
			return bw.Flush()
		}
		after = recs[len(recs)-1].Seq
	}
}
