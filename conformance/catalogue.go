package conformance

// Level is how much a check matters.
type Level string

// Levels: a failed MUST fails the run, a failed SHOULD warns (and fails the
// run in strict mode), an INFO check only reports.
const (
	MUST   Level = "MUST"
	SHOULD Level = "SHOULD"
	INFO   Level = "INFO"
)

// Check describes one check of the catalogue.
type Check struct {
	ID    string
	Level Level
	// Title says what is checked, in a few words.
	Title string
	// Rule is the sentence of the specification or the DESIGN.md decision
	// the check enforces.
	Rule string
}

// Catalogue is every check of the suite, in report order. Ids are stable.
var Catalogue = []Check{
	{"ENV-01", MUST, "list responses match the envelope schema", `List endpoints return an envelope with data (array of records), hasMore (boolean) and nextCursor (opaque, retry-safe cursor).`},
	{"ENV-02", MUST, "every record matches its resource schema", `The resource shapes below are the normative part. Identifiers and timestamps are expected on records.`},
	{"ENV-03", MUST, "hasMore and nextCursor agree", `nextCursor is null only when hasMore is false (DESIGN.md).`},
	{"ENV-04", MUST, "JSON content type on every response, errors included", `Errors are RFC 9457 problem details (application/problem+json) (DESIGN.md); responses are JSON.`},
	{"ENV-05", SHOULD, "error bodies follow the problem schema", `Errors are RFC 9457 problem details: type, title, status, detail, and errors [{field, message}] (DESIGN.md).`},
	{"ENV-06", SHOULD, "enum values known to this version", `Fields and enum values may be added at any time.`},
	{"TIME-01", MUST, "timestamps are RFC 3339 UTC with Z", `Timestamps are RFC 3339, UTC.`},
	{"TIME-02", SHOULD, "one precision per field", `Timestamps are stored at millisecond precision (the precision served) (DESIGN.md).`},
	{"TIME-03", MUST, "unparseable timestamp filters give 400", `A known query parameter with a bad value is 400 naming it (DESIGN.md).`},
	{"TIME-04", SHOULD, "an offset in a filter means the same instant", `updatedSince, startedAfter and occurredAfter are RFC 3339; any offset is accepted (DESIGN.md).`},
	{"PAGE-01", MUST, "walks end and never repeat a cursor", `List endpoints return ... nextCursor (opaque, retry-safe cursor).`},
	{"PAGE-02", MUST, "no duplicates, no gaps", `Pagination is keyset on that pair, so ... no record is skipped or repeated (DESIGN.md).`},
	{"PAGE-03", MUST, "ties on the sort key across a page boundary", `... no record is skipped or repeated when many records share one timestamp (DESIGN.md).`},
	{"PAGE-04", MUST, "deterministic order", `Order: conversations and assistants by (updatedAt, id) ascending; events by (occurredAt, id) ascending (DESIGN.md).`},
	{"PAGE-05", MUST, "a cursor is retry-safe", `nextCursor (opaque, retry-safe cursor).`},
	{"PAGE-06", MUST, "malformed cursors give 400", `A malformed cursor is 400 (DESIGN.md).`},
	{"PAGE-07", SHOULD, "a cursor is bound to its endpoint", `Another endpoint's cursor is 400 (DESIGN.md).`},
	{"PAGE-08", SHOULD, "a cursor is bound to its filters", `A changed or missing filter ... is 400 (DESIGN.md).`},
	{"PAGE-09", MUST, "the page size is honoured and bounded", `Page size: query parameter limit, default 100, range 1..1000, outside it 400 (DESIGN.md).`},
	{"PAGE-10", SHOULD, "cursors are opaque", `Cursors are opaque (base64url) (DESIGN.md).`},
	{"PAGE-11", INFO, "empty page with hasMore true", `List endpoints return an envelope with data, hasMore and nextCursor.`},
	{"PAGE-12", MUST, "lists are in keyset order", `Order: (updatedAt, id) ascending; events by (occurredAt, id) ascending; ids compare byte by byte (DESIGN.md).`},
	{"FILT-01", MUST, "filter bounds hold", `updatedSince is inclusive (>=); startedAfter and occurredAfter are exclusive (>) (DESIGN.md).`},
	{"FILT-02", MUST, "filtered results are complete", `Incremental filters updatedSince and occurredAfter.`},
	{"FILT-03", MUST, "a far-future bound is an empty 200", `Incremental filters updatedSince and occurredAfter.`},
	{"FILT-04", MUST, "category filters events", `category takes the event category values.`},
	{"FILT-05", INFO, "unknown, wrongly cased or repeated query parameters", `Unknown query parameters are ignored (DESIGN.md).`},
	{"USE-01", MUST, "usage buckets are aligned and inside the range", `startAt and endAt, half-open [startAt, endAt), rounded to the granularity's UTC boundary (DESIGN.md).`},
	{"USE-02", MUST, "groupBy is honoured", `dimensions: grouping keys present, any subset of model, assistantId, userId, department.`},
	{"USE-03", SHOULD, "grouped sums equal ungrouped totals", `Aggregated, time-bucketed usage.`},
	{"USE-04", MUST, "bad usage parameters give 400", `granularity is hour or day; groupBy a subset of model, assistantId, userId, department; range at most 31 days for hour, 366 for day (DESIGN.md).`},
	{"REC-01", MUST, "a single record equals its list item", `Single-record endpoints return the record of the resource.`},
	{"REC-02", MUST, "an unknown id is 404", `Unknown id: 404 (DESIGN.md).`},
	{"REC-03", MUST, "hostile ids do not crash", `Nothing a client sends may cause a 5xx.`},
	{"REC-04", MUST, "a deleted conversation is a tombstone", `A deleted conversation stays listed as a tombstone: deletedAt set, updatedAt bumped, content fields dropped (DESIGN.md).`},
	{"AUTH-01", MUST, "credentials required everywhere", `A single credential per customer, either a bearer token or an API key.`},
	{"AUTH-02", MUST, "a 401 carries a challenge", `Missing or unknown credential: 401 with WWW-Authenticate: Bearer (DESIGN.md).`},
	{"AUTH-03", MUST, "scopes are enforced", `Optional per-resource scopes, for example read:usage and read:conversations, let a customer share usage metrics without conversation content.`},
	{"AUTH-04", MUST, "cursors confer no authority", `It is scoped to that customer's data only.`},
	{"AUTH-05", SHOULD, "no credentials in the query string", `Auth: Authorization: Bearer <token> or X-API-Key: <token> (DESIGN.md).`},
	{"AUTH-06", MUST, "both header forms work", `Authorization: Bearer <token> or X-API-Key: <token> (X-API-Key wins when both) (DESIGN.md).`},
	{"AUTH-07", MUST, "another tenant's records are invisible", `It is scoped to that customer's data only.`},
	{"HTTP-01", MUST, "no 5xx anywhere in the run", `A 500 never shows internals (DESIGN.md); nothing a client sends may cause a 5xx.`},
	{"HTTP-02", SHOULD, "read-only", `Access is strictly read-only.`},
	{"HTTP-03", SHOULD, "rate limiting is well formed", `Rate limits ... a 429 carries Retry-After (DESIGN.md).`},
}

// checkByID returns the catalogue entry of id.
func checkByID(id string) (Check, bool) {
	for _, c := range Catalogue {
		if c.ID == id {
			return c, true
		}
	}
	return Check{}, false
}
