// Package mcp serves the AI usage data interface over the Model Context
// Protocol (on github.com/mark3labs/mcp-go v1), so that AI tools (Claude
// Desktop, IDEs, agents) can ask how an organisation uses AI.
//
// The tools are a thin layer over the REST interface: each calls a [Backend]
// with the REST path and query parameters its arguments map to, and its
// structured content is exactly the REST answer (the list envelope or the
// record), with a text block holding a one-line summary and the same JSON.
//
//	tool                REST                      arguments
//	list_conversations  GET /conversations        updatedSince, startedAfter, cursor, limit, fields
//	get_conversation    GET /conversations/{id}   id
//	list_assistants     GET /assistants           updatedSince, cursor, limit
//	get_assistant       GET /assistants/{id}      id
//	list_events         GET /events               occurredAfter, category, cursor, limit
//	get_usage           GET /usage                startAt, endAt, granularity, groupBy, cursor, limit
//
// Every tool is annotated read-only, not destructive, idempotent and closed
// world. Its input schema is written by hand (types, formats, ranges, enums,
// descriptions) and refuses unknown arguments; its output schema is the spec/
// schema bundled into one self-contained document by [OutputSchema]. An
// argument given as null counts as not given; groupBy is an array of
// dimensions (a comma-separated string is accepted too); fields="summary"
// drops messages, systemPrompt, tools and attachments from each listed
// conversation.
//
// Domain errors are tool results with isError set, never protocol errors: an
// unknown argument or one of the wrong JSON type is refused by the tool, and
// everything else is checked by the REST layer, whose problem detail names
// the argument (400), the missing scope (403) or the unknown id (404).
//
// The resource templates aiusage://conversations/{id} and
// aiusage://assistants/{id} read one record as application/json; an unknown
// id fails the read (wrapping [ErrNoRecord]).
//
// Serving a data source over streamable HTTP beside the REST interface, with
// the same tokens and scopes (a request without a valid credential gets the
// REST 401 with WWW-Authenticate before the MCP layer):
//
//	srv, err := mcp.NewServer(ds, mcp.WithCursorKey(key))
//	if err != nil {
//		return err
//	}
//	h, err := provider.NewHandler(ds,
//		provider.WithTokens(tokens...),
//		provider.WithCursorKey(key), // cursors work on both interfaces
//		provider.WithMount("/mcp", srv.HTTPHandler()))
//	if err != nil {
//		return err
//	}
//	return http.ListenAndServe(addr, h)
//
// Over stdio, the caller is the principal of [WithPrincipal]:
//
//	srv, err := mcp.NewServer(ds, mcp.WithPrincipal(provider.Principal{Tenant: "acme"}))
//	...
//	err = srv.ServeStdio(ctx, os.Stdin, os.Stdout)
//
// and [NewRemote] serves any REST provider, in any language, over stdio:
//
//	srv, err := mcp.NewRemote("https://vendor.example/aiusage", token, nil)
//	...
//	err = srv.ServeStdio(ctx, os.Stdin, os.Stdout)
//
// The streamable HTTP transport is stateless by default: initialize answers
// no session id, and nothing is kept between requests, so a client looping
// on initialize costs nothing after each answer and several processes serve
// any client. [WithSessions] turns sessions on, each credential holding at
// most [WithMaxSessionsPerCredential] of them (64) for at most
// [WithSessionIdleTimeout] without a request (10 minutes); a request naming
// an ended session is answered 404, and the client initializes again.
//
// mcp-go's streamable HTTP transport answers 403 to a request that reaches a
// loopback address (127.0.0.1, ::1) with a Host header other than localhost
// or a loopback address, against DNS rebinding; clients of a local server
// should use such URLs, or the server [WithAllowAnyHost].
package mcp
