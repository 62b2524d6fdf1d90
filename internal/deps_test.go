// Package internal_test holds the imports test of the whole module: the
// layout is an architecture only while imports follow its direction.
package internal_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/aiusage/kit/"

// rules lists, for every package of the module, the packages of the module
// its non-test files may import: a name, or a prefix ending in "/" for a
// group. A package not listed fails the test, so a new package has to be
// given its place. Dependencies point downward:
//
//	spec <- provider <- (consumer, mcp, provider/*)      public, for vendors and users
//	spec <- conformance, policy                           black-box suite, text evaluation
//	internal/infra/*                                      database, HTTP plumbing, operations, demo data
//	internal/app/*  <- internal/app/server                 the service's features, and its composition root
//	internal/app/server <- internal/cli <- cmd/aiusage    the binary
//	internal/testkit/*                                    test-only tools, imported by tests alone
//	adapters/*, examples/*                                other products' data served, and examples: public packages only
var rules = map[string][]string{
	"spec":                  {"spec/internal/schemacheck"},
	"spec/webhook":          {"internal/infra/httpclient"},
	"conformance":           {"spec", "spec/webhook", "internal/infra/httpclient"},
	"policy":                {"spec", "policy/internal/"},
	"policy/embeddings":     {"policy", "spec", "internal/infra/httpclient", "internal/infra/openaiapi"},
	"policy/judge":          {"policy", "internal/infra/httpclient", "internal/infra/openaiapi"}, // the model judge of Semantic instructions
	"policy/semeval":        {"policy"},
	"provider":              {"spec", "internal/infra/httpx"},
	"provider/memsource":    {"provider", "spec"},
	"provider/sqlsource":    {"provider", "spec", "internal/infra/sqldb", "internal/infra/sqlpage"},
	"provider/push":         {"provider", "spec", "spec/webhook", "internal/infra/sqldb", "internal/infra/riverjobs", "internal/infra/liveness"},
	"provider/providertest": {"provider", "spec", "conformance", "internal/infra/demodata"},
	"provider/export":       {"provider", "spec"},
	"consumer":              {"provider", "spec", "internal/infra/httpclient", "internal/infra/liveness", "consumer/internal/jsonvalue"},
	"consumer/sqlstore":     {"consumer", "provider", "spec", "internal/infra/sqldb", "internal/infra/sqlpage"},
	"consumer/export":       {"consumer", "provider", "spec", "internal/infra/httpclient"},
	// The OpenAI and Anthropic administration usage APIs as sources, and
	// their local fakes.
	"consumer/vendorusage":            {"consumer", "provider", "spec", "internal/infra/httpclient"},
	"consumer/vendorusage/vendortest": {},
	"mcp":                             {"consumer", "provider", "spec", "internal/infra/httpx"},

	// The fast paths of the public packages (docs/design.md, "Fast paths"):
	// only their owner imports them (see ownerOf).
	"spec/internal/schemacheck":   {},
	"consumer/internal/jsonvalue": {},
	"policy/internal/fold":        {},
	"policy/internal/ahocorasick": {"policy/internal/fold"},
	"policy/internal/prefilter":   {"policy/internal/fold"},

	"internal/infra/httpx":           {"spec", "internal/infra/ident", "internal/infra/reqcheck"},
	"internal/infra/reqcheck":        {"spec"},
	"internal/infra/ident":           {},
	"internal/infra/sqldb":           {},
	"internal/infra/sqldb/sqldbtest": {"internal/infra/sqldb"},
	"internal/infra/sqlpage":         {"provider", "internal/infra/sqldb"},
	"internal/infra/ops":             {"internal/infra/sqldb"},
	"internal/infra/riverjobs":       {"internal/infra/sqldb"},
	"internal/infra/keyring":         {},
	"internal/infra/netguard":        {},
	"internal/infra/httpclient":      {},                            // imported by public packages: it imports nothing of the kit
	"internal/infra/openaiapi":       {"internal/infra/httpclient"}, // one call of an OpenAI-compatible endpoint: imported by public packages
	"internal/infra/liveness":        {},                            // a process's name, and whether the process it names is gone: imported by public packages
	"internal/infra/demodata":        {"provider", "spec"},

	// The domain packages read no HTTP: they return spec errors, and their
	// requests validate themselves (the JSON APIs, the dashboard and the
	// commands all call the same Validate).
	"internal/app/org": {"spec", "policy", // policy: the one check of a Regex pattern's cost
		"internal/infra/sqldb", "internal/infra/ident", "internal/infra/reqcheck"},
	"internal/app/people": {"spec", "internal/app/org", "internal/infra/sqldb", "internal/infra/ident", "internal/infra/reqcheck"},
	"internal/app/orgapi": {"spec", "internal/app/org", "internal/infra/"},
	// Single sign-on: organisations' OpenID Connect settings and sign-ins,
	// which end in the people's accounts and sessions.
	"internal/app/sso":       {"spec", "internal/app/org", "internal/app/people", "internal/infra/"},
	"internal/app/reviewapi": {"spec", "spec/webhook", "policy", "internal/app/org", "internal/app/people", "internal/infra/"},
	"internal/app/dashboard": {"spec", "internal/app/org", "internal/app/orgapi", "internal/app/people", "internal/app/reviewapi",
		"internal/app/sources", "internal/app/sso", "internal/infra/",
		"consumer/sqlstore"}, // the types of the sources service's OrgUsage and SearchConversations
	// The mapping of AI tools' OpenTelemetry: pure functions over the OTLP types.
	"internal/app/telemetry/tools": {"spec"},
	"internal/app/sources": {"spec", "spec/webhook", "provider", "consumer", "consumer/sqlstore", "consumer/export", "mcp",
		"consumer/vendorusage", // the openai and anthropic transports
		"conformance",          // "check this source": the suite run against a source
		"internal/app/org", "internal/infra/"},

	// The OTLP/HTTP and OTLP/gRPC wire layer of the telemetry endpoint: decoding and
	// answering, with no knowledge of what a key opens or of the data's meaning.
	"internal/app/telemetry/otlpwire": {"spec"},
	// The telemetry endpoint: Ingestion keys, the mapping and the wire layer
	// above, its tables, and the consumer's store it writes the sources'
	// collected views through.
	"internal/app/telemetry": {"spec", "consumer", "internal/app/org", "internal/app/telemetry/tools",
		"internal/app/telemetry/otlpwire", "internal/infra/"},

	// The composition root wires every feature: it may import them all.
	"internal/app/server": {"internal/app/", "internal/infra/",
		"consumer/sqlstore", // its migrations, for /readyz
		"consumer"},         // the sources' store, given to the telemetry endpoint

	"internal/cli": {"spec", "spec/webhook", "provider", "provider/sqlsource", "provider/export", "provider/push", "consumer", "consumer/sqlstore", "consumer/export", "mcp",
		"consumer/vendorusage", // consumer sync --transport openai|anthropic
		"conformance", "policy", "policy/embeddings", "policy/judge", "policy/semeval", "internal/app/", "internal/infra/",
		"adapters/openwebui/webui"}, // aiusage demo --openwebui-db serves an Open WebUI database as a source
	"cmd/aiusage": {"internal/cli"},

	// Examples show what a user outside the module can do: public packages only.
	"examples/embed":  {"spec", "provider", "provider/memsource"},
	"examples/vendor": {"spec", "provider", "provider/memsource", "conformance"},

	// Adapters serve another product's data through the public packages
	// alone, so that each could become a module of its own.
	"adapters/openwebui":       {"provider", "mcp", "adapters/openwebui/webui"},
	"adapters/openwebui/webui": {"spec", "provider"},

	"internal/testkit/faultproxy":  {},
	"internal/testkit/webhooktest": {},
	"internal/testkit/bench":       {},
	"internal/testkit/race":        {},
	"internal/testkit/embedtest":   {},
	"internal/testkit/judgetest":   {},                          // a stand-in chat completions judge for tests
	"internal/testkit/pagemem":     {"spec", "provider", "mcp"}, // the memory of one list request, for the page-size tests
	"internal/testkit/servicetest": {"internal/app/server"},     // the whole service, for its features' tests
}

// root is the service's composition root. Only rootImporters import it
// outside tests: a feature is wired by the root, never wires the service.
const root = "internal/app/server"

var rootImporters = []string{"internal/cli", "internal/testkit/servicetest"}

// features are the feature packages of the service. None imports another
// outside tests: they meet in the composition root, which gives each what it
// uses of the others through its Config. The dashboard is not among them: it
// draws the pages of the review and sources services, and keeps importing
// reviewapi and sources for them.
var features = []string{"internal/app/orgapi", "internal/app/reviewapi", "internal/app/sources", "internal/app/telemetry"}

// testOnly are packages no test of the module may import except where
// listed: the command tree is the binary's alone.
var testOnly = map[string][]string{
	"internal/cli": {"internal/cli", "cmd/aiusage"},
}

type pkg struct {
	imports     []string // of the module, by non-test files
	testImports []string // of the module, by _test.go files
	hasGo       bool     // has a non-test file
}

func TestImports(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pk := pkgs[rel]
		if pk == nil {
			pk = &pkg{}
			pkgs[rel] = pk
		}
		test := strings.HasSuffix(p, "_test.go")
		for _, im := range f.Imports {
			v, _ := strconv.Unquote(im.Path.Value)
			if !strings.HasPrefix(v, module) {
				continue
			}
			v = strings.TrimPrefix(v, module)
			if test {
				pk.testImports = append(pk.testImports, v)
			} else {
				pk.imports = append(pk.imports, v)
			}
		}
		if !test {
			pk.hasGo = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages under %s; the walk is broken", len(pkgs), root)
	}
	for _, problem := range check(pkgs, rules) {
		t.Error(problem)
	}
}

// check returns what breaks the rules in pkgs.
func check(pkgs map[string]*pkg, rules map[string][]string) []string {
	var out []string
	names := make([]string, 0, len(pkgs))
	for name := range pkgs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		pk := pkgs[name]
		if pk.hasGo {
			allowed, ok := rules[name]
			if !ok {
				out = append(out, fmt.Sprintf("%s: not in the rules of internal/deps_test.go; give the new package its place", name))
			}
			for _, im := range pk.imports {
				if ok && !allows(allowed, im) {
					out = append(out, fmt.Sprintf("%s imports %s, against the direction of the layout (allowed: %v)", name, im, allowed))
				}
				if strings.HasPrefix(im, "internal/testkit/") {
					out = append(out, fmt.Sprintf("%s imports the test-only %s outside its tests", name, im))
				}
				if im == root && !slices.Contains(rootImporters, name) {
					out = append(out, fmt.Sprintf("%s imports the composition root %s, which only %v may import", name, im, rootImporters))
				}
				if slices.Contains(features, name) && slices.Contains(features, im) {
					out = append(out, fmt.Sprintf("the feature %s imports the feature %s; features meet in %s", name, im, root))
				}
			}
		}
		for _, im := range pk.imports {
			if owner := ownerOf(im); owner != "" && name != owner && !strings.HasPrefix(name, owner+"/internal/") {
				out = append(out, fmt.Sprintf("%s imports %s, an internal package of %s alone", name, im, owner))
			}
		}
		for _, im := range append(slices.Clone(pk.imports), pk.testImports...) {
			if who, ok := testOnly[im]; ok && !slices.Contains(who, name) {
				out = append(out, fmt.Sprintf("%s imports %s, which only %v may import", name, im, who))
			}
			if !strings.HasPrefix(name, "examples/") && strings.HasPrefix(im, "examples/") {
				out = append(out, fmt.Sprintf("%s imports the example %s; only examples may", name, im))
			}
			if !strings.HasPrefix(name, "internal/") && !strings.HasPrefix(name, "cmd/") && strings.HasPrefix(im, "internal/app/") {
				out = append(out, fmt.Sprintf("the public %s imports the service's %s", name, im))
			}
		}
	}
	for name := range rules {
		if pk, ok := pkgs[name]; !ok || !pk.hasGo {
			out = append(out, fmt.Sprintf("rules name %s, which is not a package of the module any more", name))
		}
	}
	slices.Sort(out)
	return out
}

// ownerOf returns the public package whose internal package im is, or ""
// when it is none: only the owner and the owner's other internal packages
// may import it (Go alone would let any package under the owner's directory
// do so).
func ownerOf(im string) string {
	if strings.HasPrefix(im, "internal/") {
		return ""
	}
	owner, _, ok := strings.Cut(im, "/internal/")
	if !ok {
		return ""
	}
	return owner
}

func allows(allowed []string, im string) bool {
	for _, a := range allowed {
		if a == im || strings.HasSuffix(a, "/") && strings.HasPrefix(im, a) {
			return true
		}
	}
	return false
}

// TestImportsCheckCatches checks the checker on made-up packages: each
// kind of violation is reported, and a clean layout is not.
func TestImportsCheckCatches(t *testing.T) {
	r := map[string][]string{"spec": {}, "conformance": {"spec"}, "internal/app/orgapi": {"spec", "internal/infra/"}, "internal/infra/sqldb": {}}
	clean := map[string]*pkg{
		"spec":                 {hasGo: true},
		"conformance":          {hasGo: true, imports: []string{"spec"}, testImports: []string{"internal/testkit/bench"}},
		"internal/app/orgapi":  {hasGo: true, imports: []string{"spec", "internal/infra/sqldb"}},
		"internal/infra/sqldb": {hasGo: true},
	}
	if got := check(clean, r); len(got) != 0 {
		t.Fatalf("a clean layout reported: %v", got)
	}
	for _, c := range []struct {
		name string
		edit func(map[string]*pkg)
		want string
	}{
		{"upward import", func(p map[string]*pkg) {
			p["conformance"].imports = append(p["conformance"].imports, "internal/infra/sqldb")
		}, "conformance imports internal/infra/sqldb"},
		{"group prefix is not a name prefix", func(p map[string]*pkg) { p["internal/app/orgapi"].imports = []string{"internal/infrax"} }, "orgapi imports internal/infrax"},
		{"unlisted package", func(p map[string]*pkg) { p["newpkg"] = &pkg{hasGo: true} }, "newpkg: not in the rules"},
		{"stale rule", func(p map[string]*pkg) { delete(p, "internal/infra/sqldb") }, "rules name internal/infra/sqldb"},
		{"testkit outside tests", func(p map[string]*pkg) { p["spec"].imports = []string{"internal/testkit/bench"} }, "spec imports the test-only"},
		{"command tree", func(p map[string]*pkg) { p["conformance"].testImports = []string{"internal/cli"} }, "conformance imports internal/cli, which only"},
		{"public imports the service", func(p map[string]*pkg) { p["conformance"].testImports = []string{"internal/app/orgapi"} }, "the public conformance imports the service's"},
		{"feature imports the root", func(p map[string]*pkg) { p["internal/app/orgapi"].imports = []string{root} }, "orgapi imports the composition root"},
		{"feature imports a feature", func(p map[string]*pkg) {
			p["internal/app/sources"] = &pkg{hasGo: true, imports: []string{"internal/app/reviewapi"}}
		}, "the feature internal/app/sources imports the feature internal/app/reviewapi"},
		{"orgapi imports a feature", func(p map[string]*pkg) { p["internal/app/orgapi"].imports = []string{"internal/app/sources"} }, "the feature internal/app/orgapi imports"},
		{"non-example imports an example", func(p map[string]*pkg) { p["internal/app/orgapi"].imports = []string{"examples/embed"} }, "orgapi imports the example examples/embed"},
		{"another package's fast path", func(p map[string]*pkg) { p["conformance"].imports = []string{"spec", "spec/internal/schemacheck"} }, "an internal package of spec alone"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := map[string]*pkg{}
			for k, v := range clean {
				cp := *v
				cp.imports, cp.testImports = slices.Clone(v.imports), slices.Clone(v.testImports)
				p[k] = &cp
			}
			c.edit(p)
			got := strings.Join(check(p, r), "\n")
			if !strings.Contains(got, c.want) {
				t.Fatalf("got %q, want it to name %q", got, c.want)
			}
		})
	}
}
