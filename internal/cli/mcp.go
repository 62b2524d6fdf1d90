package cli

import (
	"context"
	"flag"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aiusage/kit/mcp"
)

type mcpFlags struct {
	url, token string
	timeout    time.Duration
}

func mcpCommand() *command {
	f := &mcpFlags{}
	return &command{
		name:    "mcp",
		summary: "serve a REST provider of the AI usage data interface over MCP on stdio",
		long: `Runs an MCP server on standard input and output for an AI tool (Claude Desktop,
an IDE, an agent), over the REST provider at --url: any provider, in any
language. Its tools are list_conversations, get_conversation, list_assistants,
get_assistant, list_events and get_usage; its resources
aiusage://conversations/{id} and aiusage://assistants/{id}. Every call is one
GET to the provider with --token, so the provider's scopes apply.

Configure an MCP client with the command "aiusage" and the arguments
["mcp", "--url", "https://provider.example/ai-usage", "--token", "T"] (or the
token in the environment variable AIUSAGE_TOKEN). Logs go to standard error.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.url, "url", "", "base `URL` of the REST provider (required)")
			fs.StringVar(&f.token, "token", "", "`TOKEN` of the provider (required)")
			fs.DurationVar(&f.timeout, "timeout", 60*time.Second, "timeout of each request to the provider")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			if f.url == "" || f.token == "" {
				return usagef("%s: --url and --token are required", e.cmd)
			}
			u, err := url.Parse(f.url)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return usagef("%s: --url %q is not an http(s) URL", e.cmd, f.url)
			}
			if f.timeout <= 0 {
				return usagef("%s: --timeout must be positive", e.cmd)
			}
			srv, err := mcp.NewRemote(strings.TrimRight(f.url, "/"), f.token, &http.Client{Timeout: f.timeout})
			if err != nil {
				return usagef("%s: %v", e.cmd, err)
			}
			return srv.ServeStdio(ctx, e.stdin, e.stdout)
		},
	}
}
