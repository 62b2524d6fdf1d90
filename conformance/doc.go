// Package conformance checks a provider of the AI usage data interface
// against the specification: black-box, over HTTP, so a provider written in
// any language can be checked, the way a consumer will use it.
//
// The suite sends the read-only GET requests of the interface
// (/conversations, /conversations/{id}, /assistants, /assistants/{id},
// /events and /usage), follows every cursor to the end, and checks what
// comes back: list envelopes and records against the JSON Schemas of the
// spec package, timestamps, keyset pagination and cursors, filters, usage
// buckets, single records, credentials, scopes and tenants, and HTTP
// behaviour. [Catalogue] lists every check with its stable id, its level
// (MUST, SHOULD, INFO), what it sends, what it requires and the rule it
// enforces.
//
// [Run] runs the suite and returns a [Report]: one [Result] per check and
// endpoint, with a status (PASS, FAIL, WARN, SKIP, ERROR) and, for a
// failure, evidence to reproduce it (a curl command with the credentials
// masked, the start of the answer, a JSON pointer). Its error is not nil
// only when the [Config] is wrong or the provider cannot be reached
// ([ErrUnreachable]) within Config.Wait; failed checks are in the report,
// and [Report.Failed] says whether they fail the run. A report is written
// with [Report.WriteText], [Report.WriteJSON], [Report.WriteJUnit] or
// [Report.WriteHTML]. [ReadBaseline] reads a file of checks expected to
// fail.
//
// [Test] runs the suite inside go test, each result a subtest, so that a
// provider written in Go checks itself in its own tests:
//
//	func TestConformance(t *testing.T) {
//		srv := httptest.NewServer(handler) // the provider under test
//		t.Cleanup(srv.Close)
//		conformance.Test(t, conformance.Config{
//			BaseURL:          srv.URL,
//			Token:            "token-that-reads-everything",
//			UsagelessToken:   "token-without-read-usage",
//			OtherTenantToken: "token-of-another-customer",
//		})
//	}
//
// Any other provider runs the same suite with the command
// aiusage conformance --url URL --token TOKEN.
//
// A provider's scheduled export (gzip NDJSON sets with manifests, read from
// a directory or over HTTP) has checks of its own, [ExportCatalogue], run
// by [RunExport] and by aiusage conformance export DIR|URL, with the same
// [Report].
//
// docs/conformance.md in the repository describes the suite for its users:
// how to run it, levels, statuses and exit codes, walks, baselines, report
// formats, and every check. It is generated from [Catalogue] by
// [WriteCatalogueMarkdown]; [WriteCatalogueText] prints the same catalogue
// for a terminal.
package conformance
