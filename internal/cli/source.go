package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	cexport "github.com/aiusage/kit/consumer/export"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/spec"
)

// --- admin source

const hintSources = "'aiusage admin source list --org ID' lists an organisation's sources"

func adminSourceCommand() *command {
	return &command{
		name:    "source",
		summary: "add, list and remove the sources (providers) the service collects for an organisation",
		subs:    []*command{adminSourceAddCommand(), adminSourceListCommand(), adminSourceRemoveCommand(), adminSourceResumeCommand()},
	}
}

// sourceJSON is a source as the admin source commands print it: the token
// masked.
type sourceJSON struct {
	sources.Source
	Every string `json:"every"`
	Token string `json:"token"`
}

// listedJSON is a source as 'admin source list' prints it: with its
// records and sync status per resource.
type listedJSON struct {
	sourceJSON
	Resources map[string]*sources.ResourceStatus `json:"resources"`
}

func toSourceJSON(s sources.Source) sourceJSON {
	return sourceJSON{Source: s, Every: s.Every.String(), Token: s.TokenHint()}
}

// registerExportMaxFile registers --export-max-file-mib, the bound of one
// export file read (export.Config.MaxFileBytes and MaxPlainBytes).
func registerExportMaxFile(fs *flag.FlagSet, v *int64) {
	fs.Int64Var(v, "export-max-file-mib", cexport.DefaultMaxPlainBytes>>20, "most MiB one file of a scheduled export may hold, compressed and decompressed; past it the file is refused as too large (a line is at most 8 MiB)")
}

// checkExportMaxFile checks --export-max-file-mib.
func checkExportMaxFile(cmd string, mib int64) error {
	if mib < 1 || mib > 1<<20 {
		return usagef("%s: --export-max-file-mib must be 1 to 1048576, got %d", cmd, mib)
	}
	return nil
}

// sourcePolicyFlags are what the sources may reach: the flags of "service
// serve" and "admin source add", which share their environment variables so
// that one setting serves both.
type sourcePolicyFlags struct {
	exportRoot   string
	allowPrivate bool
}

func (f *sourcePolicyFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.exportRoot, "export-root", "", "`DIR` of this host below which export sources may read; \""+sources.OrganisationPlaceholder+
		"\" in it stands for the organisation's id (default: none, exports over https only)")
	fs.BoolVar(&f.allowPrivate, "allow-private-sources", false, "let sources' URLs be http and point at private, loopback or link-local addresses (local use only)")
}

// check checks --export-root: an absolute directory when given.
func (f *sourcePolicyFlags) check(cmd string) error {
	if f.exportRoot != "" && !filepath.IsAbs(f.exportRoot) {
		return usagef("%s: --export-root must be an absolute directory, got %q", cmd, f.exportRoot)
	}
	if f.exportRoot != "" {
		f.exportRoot = filepath.Clean(f.exportRoot)
	}
	return nil
}

// config sets the policy in cfg.
func (f *sourcePolicyFlags) config(cfg *sources.Config) {
	cfg.ExportRoot, cfg.AllowPrivate = f.exportRoot, f.allowPrivate
}

// sourceError turns an error of the sources service into the command's error.
func sourceError(cmd, hint string, err error) error {
	switch {
	case errors.Is(err, spec.ErrInvalid):
		return usagef("%s: %v", cmd, err)
	case errors.Is(err, spec.ErrNotFound) && hint != "":
		return fmt.Errorf("%s: %w; %s", cmd, err, hint)
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

func adminSourceAddCommand() *command {
	f := &struct {
		orgFlags
		name, url, token, transport string
		every                       time.Duration
		policy                      sourcePolicyFlags
	}{}
	return &command{
		name:    "add",
		summary: "add a source of an organisation and print it as JSON",
		long: `Adds a source to the organisation --org: a provider of the AI usage data
interface that 'aiusage service serve' syncs every --every, and prints it as
one JSON object: id, organisationId, name, url, transport, every, createdAt,
nextSyncAt, lastSyncStartedAt and token (masked: only its last four characters).

With --transport mcp, --url is the provider's MCP endpoint (its base address
followed by /mcp). With --transport export, the source reads the provider's
scheduled export (docs/export.md): --url is its base address (https, or http on
a loopback address) or a directory of the service's host (an absolute path or
a file:// URL), and --token is optional (sent over HTTP only; a directory takes
none).

What a source may reach is the service's decision, with the same settings
as 'aiusage service serve' (give both the same AIUSAGE_EXPORT_ROOT and
AIUSAGE_ALLOW_PRIVATE_SOURCES): URLs must be https to public addresses unless
--allow-private-sources, and a directory must lie below --export-root (with
none, no directory is accepted). The service checks again at every sync.

With --transport push the provider pushes its records to the service (see
docs/push.md): the JSON also holds secret, the signing secret to give the
provider, shown this once and never again, and receiverPath, the path below the
service's base URL it pushes to (/push/{id}). --url and --token are then
optional, both or neither: the provider's REST address, walked every --every
(default 1h) to reconcile pushes that were lost.

With --transport openai or anthropic, the source reads the organisation's usage
and costs from that vendor's administration API: --token is the organisation's
Admin key (OpenAI sk-admin-..., Anthropic sk-ant-admin...), and --url is
optional, the vendor's base address by default (https://api.openai.com,
https://api.anthropic.com; set it for a compatible gateway). Only usage is
synced, every --every (default 1h). See docs/consumer.md for what the records
hold.

The organisation's API keys read what was collected at
/organisations/{organisationId}/sources/{id}/ (conversations, assistants,
events, usage; MCP at .../mcp), and the sources with their sync status at
/organisations/{organisationId}/sources.

` + adminExit,
		flags: func(fs *flag.FlagSet) {
			f.registerOrg(fs, true)
			fs.StringVar(&f.name, "name", "", "`NAME` of the source, 1 to 200 characters, unique in the organisation (required)")
			fs.StringVar(&f.url, "url", "", "base `URL` of the provider, http or https (required, except with --transport push, openai or anthropic; with --transport mcp its MCP endpoint; with --transport export the export's https base address or directory; with openai or anthropic the vendor's API address, by default its own)")
			fs.StringVar(&f.token, "token", "", "`TOKEN` of the provider, sent as Authorization: Bearer (required, except with --transport export or push; with --transport openai or anthropic the organisation's Admin key)")
			fs.StringVar(&f.transport, "transport", sources.DefaultTransport, "`TRANSPORT` to the provider: rest, mcp, export, push, openai or anthropic")
			fs.DurationVar(&f.every, "every", sources.DefaultEvery, "sync every `DURATION`, at least 10s (with --transport push: reconcile, default 1h; with openai or anthropic default 1h)")
			f.policy.register(fs)
		},
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID, err := f.orgID(cmd)
			if err != nil {
				return err
			}
			needed := [][2]string{{"name", f.name}, {"url", f.url}, {"token", f.token}}
			switch f.transport {
			case sources.TransportREST, sources.TransportMCP:
			case sources.TransportExport:
				needed = needed[:2] // the token is optional
				if err := checkExportFlags(cmd, f.url, f.token); err != nil {
					return err
				}
			case sources.TransportPush:
				needed = needed[:1]
				if (f.url == "") != (f.token == "") {
					return usagef("%s: with --transport push, give --url and --token together (the REST address of the reconciliation walk) or neither", cmd)
				}
				if !flagSet(fs, "every") {
					f.every = sources.DefaultReconcileEvery
				}
			case sources.TransportOpenAI, sources.TransportAnthropic:
				needed = [][2]string{{"name", f.name}, {"token", f.token}} // the URL defaults to the vendor's
				if !flagSet(fs, "every") {
					f.every = sources.DefaultVendorEvery
				}
			default:
				return usagef("%s: --transport must be rest, mcp, export, push, openai or anthropic, got %q", cmd, f.transport)
			}
			for _, r := range needed {
				if err := required(cmd, r[0], r[1]); err != nil {
					return err
				}
			}
			if f.every < sources.MinEvery {
				return usagef("%s: --every must be at least %s, got %s", cmd, sources.MinEvery, f.every)
			}
			if _, err := f.actorOf(cmd, e); err != nil {
				return err
			}
			if err := f.policy.check(cmd); err != nil {
				return err
			}
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				s, err := d.sources(f.policy)
				if err != nil {
					return err
				}
				src, err := s.Add(ctx, orgID, sources.SourceCreate{Name: f.name, URL: f.url, Token: f.token, Transport: f.transport, Every: f.every})
				if err != nil {
					return sourceError(cmd, hintOrgs, err)
				}
				if src.Transport == sources.TransportPush {
					fmt.Fprintln(e.stderr, "The secret is shown this once: give it to the provider with the receiver path.")
					return d.print(pushSourceJSON{sourceJSON: toSourceJSON(src), Secret: src.PushSecret,
						ReceiverPath: sources.PushPath(src.ID)})
				}
				return d.print(toSourceJSON(src))
			})
		},
	}
}

// pushSourceJSON is a push source as added: with its secret, shown once,
// and the path it receives pushes at.
type pushSourceJSON struct {
	sourceJSON
	Secret       string `json:"secret"`
	ReceiverPath string `json:"receiverPath"`
}

// flagSet reports whether flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func adminSourceListCommand() *command {
	f := &orgFlags{}
	return &command{
		name:    "list",
		summary: `list an organisation's sources as JSON: {"organisationId", "sources": [...]}`,
		long: `Prints the sources of the organisation --org, oldest first, as one JSON object:
{"organisationId": ID, "sources": [{"id", "name", "url", "transport", "every",
"createdAt", "nextSyncAt", "lastSyncStartedAt", "pausedAt", "lastReceivedAt",
"token" (masked), "resources": {RESOURCE: {"records", "missing", "quarantined",
"lastSuccess", "lastError", ...}}}, ...]}. "lastReceivedAt" is when a source of
transport telemetry last received an accepted request, null before the first.

` + adminExit,
		flags: func(fs *flag.FlagSet) { f.registerOrg(fs, false) },
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID, err := f.orgID(cmd)
			if err != nil {
				return err
			}
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				o := d.orgs
				s, err := d.sources(sourcePolicyFlags{})
				if err != nil {
					return err
				}
				if _, err := o.Organisation(ctx, orgID); err != nil {
					return storeError(cmd, "org", hintOrgs, err)
				}
				list, err := s.Statuses(ctx, orgID)
				if err != nil {
					return sourceError(cmd, "", err)
				}
				out := make([]listedJSON, len(list))
				for i, l := range list {
					out[i] = listedJSON{toSourceJSON(l.Source), l.Resources}
				}
				return d.print(struct {
					OrganisationID string       `json:"organisationId"`
					Sources        []listedJSON `json:"sources"`
				}{orgID, out})
			})
		},
	}
}

// sourceFlags are the flags of a command on one source of an organisation.
type sourceFlags struct {
	orgFlags
	source string
}

// registerSource declares the flags of sourceFlags on fs.
func (f *sourceFlags) registerSource(fs *flag.FlagSet) {
	f.registerOrg(fs, true)
	fs.StringVar(&f.source, "source", "", "`ID` of the source, a UUID as 'admin source list' shows it (required)")
}

// ids returns --org and --source, checked and in lowercase.
func (f *sourceFlags) ids(cmd string) (org, source string, err error) {
	if org, err = f.orgID(cmd); err != nil {
		return "", "", err
	}
	if source, err = parseID(cmd, "source", f.source); err != nil {
		return "", "", err
	}
	return org, source, nil
}

func adminSourceRemoveCommand() *command {
	f := &sourceFlags{}
	return &command{
		name:    "remove",
		summary: "remove a source of an organisation and print it as JSON",
		long: `Removes the source --source of the organisation --org and prints it as one JSON
object, as 'admin source add' did. It is no longer synced nor served; the
records collected stay in the database.

` + adminExit,
		flags: f.registerSource,
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID, id, err := f.ids(cmd)
			if err != nil {
				return err
			}
			if _, err := f.actorOf(cmd, e); err != nil {
				return err
			}
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				o := d.orgs
				s, err := d.sources(sourcePolicyFlags{})
				if err != nil {
					return err
				}
				if _, err := o.Organisation(ctx, orgID); err != nil {
					return storeError(cmd, "org", hintOrgs, err)
				}
				src, err := s.Remove(ctx, orgID, id)
				if err != nil {
					return sourceError(cmd, hintSources, err)
				}
				return d.print(toSourceJSON(src))
			})
		},
	}
}

func adminSourceResumeCommand() *command {
	f := &sourceFlags{}
	return &command{
		name:    "resume",
		summary: "resume a paused source of an organisation and print it as JSON",
		long: `Resumes the source --source of the organisation --org, paused after a sync that
failed in a way repeating it cannot mend (an export past the reader's bounds, a
directory outside the service's --export-root; 'admin source list' shows
pausedAt and pausedReason): its next sync is due at once. Prints it as one JSON
object, as 'admin source add' did, and records the change in the audit trail
(source.resumed). A source that is not paused is left as it is.

` + adminExit,
		flags: f.registerSource,
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			cmd := e.cmd
			orgID, id, err := f.ids(cmd)
			if err != nil {
				return err
			}
			actor, err := f.actorOf(cmd, e)
			if err != nil {
				return err
			}
			return f.withDB(ctx, e, time.Now(), func(d *adminDB) error {
				o := d.orgs
				s, err := d.sources(sourcePolicyFlags{})
				if err != nil {
					return err
				}
				if _, err := o.Organisation(ctx, orgID); err != nil {
					return storeError(cmd, "org", hintOrgs, err)
				}
				before, err := s.Get(ctx, orgID, id)
				if err != nil {
					return sourceError(cmd, hintSources, err)
				}
				src, err := s.Resume(ctx, orgID, id)
				if err != nil {
					return sourceError(cmd, hintSources, err)
				}
				if before.PausedAt != nil {
					if err := o.RecordAudit(ctx, orgID, actor, "source.resumed", "source", src.ID, before, src); err != nil {
						return fmt.Errorf("%s: %w", cmd, err)
					}
				}
				return d.print(toSourceJSON(src))
			})
		},
	}
}

// checkExportFlags checks --url and --token of a source of transport
// export before the database is opened.
func checkExportFlags(cmd, rawURL, token string) error {
	if rawURL == "" {
		return nil // required() names the missing flag
	}
	dir, _, err := cexport.ParseURL(rawURL)
	if err != nil {
		return usagef("%s: --url: %v", cmd, err)
	}
	if dir != "" && token != "" {
		return usagef("%s: --token: the export at %s is a directory, which takes no token", cmd, dir)
	}
	return nil
}
