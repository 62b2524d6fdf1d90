package cli

import (
	"flag"
	"fmt"
	"strings"
)

// envRole is what an environment variable of the command line holds.
type envRole int

const (
	// envSetting is a setting shared by several runs and commands: where the
	// database is, where a server listens, which provider a client reads.
	envSetting envRole = iota
	// envSent is a credential the command sends to a server.
	envSent
	// envAccepted is a credential the command, serving, accepts from clients.
	envAccepted
	// envUpstream is a credential the command sends to a service it depends
	// on, serving or not (the embeddings endpoint); no client sends it to
	// the kit's servers and no server accepts it.
	envUpstream
	// envKept is a key the command keeps to itself: the key that encrypts
	// the secrets stored in the database, never sent nor accepted.
	envKept
)

func (r envRole) String() string {
	switch r {
	case envSent:
		return "credential sent"
	case envAccepted:
		return "credential accepted"
	case envUpstream:
		return "credential sent upstream"
	case envKept:
		return "key kept"
	}
	return "setting"
}

// envVar is one environment variable of the command line: the fallback of
// --flag in each of commands, read when the flag is not on the command line.
// A variable without a flag is read by the commands themselves: it holds a
// secret that must not sit on a command line.
type envVar struct {
	name string
	flag string // "" for none
	// commands are paths in the command tree without the program ("provider
	// serve"); a group ("admin") stands for every command under it.
	commands []string
	role     envRole
	// doc says what the variable holds, for docs/cli.md.
	doc string
}

// serving are the commands that serve HTTP, with the flags of serverFlags.
var serving = []string{"demo", "provider serve", "service serve", "webhook listen"}

// environment is the documented list of the environment variables the
// aiusage command line reads, and the only ones: a flag not listed here has
// no fallback. docs/cli.md prints it (WriteCLIReference) and docs/commands.md
// describes it; tests check both, and that no variable is both a credential
// a command sends and one a server accepts, so that a token exported for a
// client (AIUSAGE_TOKEN for "aiusage mcp") never opens a server.
//
// A variable is for a setting that stays the same across runs (the database,
// the address to listen on, the provider a client reads and its credential),
// not for what one run does: names, ids, decisions, output files and report
// formats are given on the command line.
var environment = []envVar{
	{"AIUSAGE_DATABASE_URL", "database-url", []string{"admin", "consumer", "provider serve", "provider export", "provider push", "service serve"}, envSetting,
		"the database of the service (admin commands, service serve), of the consumer's store and of the provider's tables; " +
			"not read by demo, which would otherwise fill such a database with its organisation and keys"},
	{"AIUSAGE_ACTOR", "actor", []string{"admin"}, envSetting,
		"the administrator the audit trail records for an admin command's changes"},
	{"AIUSAGE_ADDR", "addr", serving, envSetting, "the address a serving command listens on"},
	{"AIUSAGE_LOG_FORMAT", "log-format", serving, envSetting, "the log format of a serving command"},
	{"AIUSAGE_SHUTDOWN_TIMEOUT", "shutdown-timeout", serving, envSetting, "how long a serving command lets requests in flight finish"},
	{"AIUSAGE_READ_TIMEOUT", "read-timeout", serving, envSetting, "how long a request body may take to arrive at a serving command"},
	{"AIUSAGE_WRITE_TIMEOUT", "write-timeout", serving, envSetting, "how long a serving command may take to write an answer"},
	{"AIUSAGE_STREAM_TIMEOUT", "stream-timeout", serving, envSetting, "how long a serving command keeps an event stream open"},
	{"AIUSAGE_MCP_SESSIONS", "mcp-sessions", []string{"provider serve", "service serve"}, envSetting,
		"whether the MCP endpoints give clients sessions (true or false)"},
	{"AIUSAGE_MCP_SESSION_IDLE_TIMEOUT", "mcp-session-idle-timeout", []string{"provider serve", "service serve"}, envSetting,
		"how long an MCP session lives without a request"},
	{"AIUSAGE_MCP_MAX_SESSIONS_PER_CREDENTIAL", "mcp-max-sessions-per-credential", []string{"provider serve", "service serve"}, envSetting,
		"the most MCP sessions one credential holds"},
	{"AIUSAGE_MAX_CONNECTIONS", "max-connections", serving, envSetting, "the most connections a serving command keeps open at once (auto, a number, or 0 for no bound)"},
	{"AIUSAGE_MAX_CONNECTIONS_PER_ADDRESS", "max-connections-per-address", serving, envSetting,
		"the most connections a serving command keeps open at once from one client address (0 for no bound)"},
	{"AIUSAGE_HEADER_TIMEOUT", "header-timeout", serving, envSetting, "how long a request's headers may take to arrive at a serving command"},
	{"AIUSAGE_IDLE_TIMEOUT", "idle-timeout", serving, envSetting, "how long a serving command keeps an idle kept-alive connection open"},
	{"AIUSAGE_URL", "url", []string{"conformance", "consumer sync", "mcp"}, envSetting,
		"the base URL of the provider a client command reads"},
	{"AIUSAGE_TOKEN", "token", []string{"conformance", "consumer sync", "mcp"}, envSent,
		"the credential of that provider, which the client sends"},
	{"AIUSAGE_TOKEN_WITHOUT_USAGE", "token-without-usage", []string{"conformance"}, envSent,
		"a credential of the same customer with every scope but read:usage (not a usage-only token), for the conformance suite"},
	{"AIUSAGE_USAGE_LESS_TOKEN", "usage-less-token", []string{"conformance"}, envSent,
		"the same, under the old name of the flag"},
	{"AIUSAGE_OTHER_TENANT_TOKEN", "other-tenant-token", []string{"conformance"}, envSent,
		"a credential of another customer, for the conformance suite"},
	{"AIUSAGE_PROVIDER_TOKENS", "token", []string{"provider serve"}, envAccepted,
		"the credentials the provider accepts, separated by spaces"},
	{"AIUSAGE_PROVIDER_TENANT_TOKENS", "tenant-token", []string{"provider serve"}, envAccepted,
		"the credentials the provider accepts for other tenants, separated by spaces"},
	{"AIUSAGE_EMBEDDINGS_API_KEY", "embeddings-api-key", []string{"demo", "policy eval", "service serve"}, envUpstream,
		"the key sent to the embeddings endpoint of --embeddings-url (as Authorization: Bearer, or api-key for Azure OpenAI)"},
	{"AIUSAGE_JUDGE_API_KEY", "judge-api-key", []string{"demo", "policy eval", "service serve"}, envUpstream,
		"the key sent to the model judge of --judge-url (as Authorization: Bearer, or api-key for Azure OpenAI)"},
	{"AIUSAGE_PUSH_SECRET", "secret", []string{"provider push"}, envSent,
		"the signing secret the pusher signs its deliveries with"},
	{"AIUSAGE_SECRET", "secret", []string{"webhook listen"}, envAccepted,
		"the signing secret the listener verifies deliveries with"},
	{envSecretKey, "", []string{"admin", "demo", "service serve"}, envKept,
		"the key (or keys, \"ID:BASE64\" separated by commas, the first current) that encrypts the secrets stored in the database; " +
			"base64 of 32 random bytes; required on PostgreSQL unless --secret-key-file (docs/security.md)"},
	{"AIUSAGE_SECRET_KEY_FILE", "secret-key-file", []string{"admin", "demo", "service serve"}, envKept,
		"the file holding that key, when AIUSAGE_SECRET_KEY is not set (default for a SQLite file: PATH.key beside it)"},
	{"AIUSAGE_EXPORT_ROOT", "export-root", []string{"admin source add", "service serve"}, envSetting,
		"the directory of the service's host below which export sources may read (\"{organisation}\" stands for the organisation's id); none by default"},
	{"AIUSAGE_ALLOW_PRIVATE_SOURCES", "allow-private-sources", []string{"admin source add", "service serve"}, envSetting,
		"\"true\" lets sources' URLs be http and point at private, loopback or link-local addresses"},
	{"AIUSAGE_ALLOW_PRIVATE_IDP", "allow-private-idp", []string{"demo", "service serve"}, envSetting,
		"\"true\" lets identity providers' issuer URLs be http and point at private, loopback or link-local addresses (demo: true by default)"},
	{"AIUSAGE_PUBLIC_URL", "public-url", []string{"demo", "service serve"}, envSetting,
		"the URL browsers reach the service at: the base of the single sign-on redirect URI registered at identity providers"},
	{"AIUSAGE_EXPORT_MAX_FILE_MIB", "export-max-file-mib", []string{"consumer sync", "service serve"}, envSetting,
		"the most MiB one file of a scheduled export may hold, compressed and decompressed"},
	{"AIUSAGE_VENDOR_RATE", "vendor-rate", []string{"consumer sync", "service serve"}, envSetting,
		"the most requests a second one sync of an OpenAI or Anthropic source sends to the vendor"},
	{"AIUSAGE_VENDOR_BACKFILL", "vendor-backfill", []string{"service serve"}, envSetting,
		"how far back the first sync of an OpenAI or Anthropic source reads"},
	{"AIUSAGE_VENDOR_LOOKBACK", "vendor-lookback", []string{"service serve"}, envSetting,
		"the recent usage and costs every later sync of an OpenAI or Anthropic source reads again"},
	{envMetricsToken, "", metricsServing, envAccepted,
		"the operations token /metrics on the main address asks for, as Authorization: Bearer"},
	{"AIUSAGE_METRICS_ADDR", "metrics-addr", metricsServing, envSetting,
		"the separate address /metrics is served on, without a token"},
	{"AIUSAGE_OTLP_GRPC_ADDR", "otlp-grpc-addr", []string{"demo", "service serve"}, envSetting,
		"the separate address OTLP over gRPC is served on to AI tools with Ingestion keys (conventionally :4317)"},
	{"AIUSAGE_OTLP_RATE", "otlp-rate", []string{"demo", "service serve"}, envSetting,
		"the OTLP requests a second one Ingestion key may send on average in each process (0: no limit)"},
	{"AIUSAGE_OTLP_BURST", "otlp-burst", []string{"demo", "service serve"}, envSetting,
		"the OTLP requests one Ingestion key may send at once after a quiet spell"},
	{"AIUSAGE_TRUSTED_PROXIES", "trusted-proxy", []string{"demo", "service serve"}, envSetting,
		"the reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed (addresses or CIDR prefixes, separated by commas)"},
	{"AIUSAGE_INVITE_TTL", "invite-ttl", []string{"admin user reset-password", "service serve"}, envSetting,
		"how long a one-time password (an invitation or a reset) may be signed in with"},
}

// under says whether the command at path is cmd or under the group cmd.
func under(path, cmd string) bool {
	return path == cmd || strings.HasPrefix(path, cmd+" ")
}

// envFor returns the environment variable of flagName in the command at
// path (without the program), or "" when it has none.
func envFor(path, flagName string) string {
	for _, v := range environment {
		if v.flag != flagName {
			continue
		}
		for _, c := range v.commands {
			if under(path, c) {
				return v.name
			}
		}
	}
	return ""
}

// applyEnv sets every flag of the command at path that is not on the
// command line from its environment variable, when it has one and that is
// set.
func applyEnv(fs *flag.FlagSet, path string, getenv func(string) string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		name := envFor(path, f.Name)
		if name == "" {
			return
		}
		if v := getenv(name); v != "" {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("invalid value %q of %s (for --%s): %v", v, name, f.Name, e)
			}
		}
	})
	return err
}
