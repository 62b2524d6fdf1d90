package conformance

// Level is how much a check matters.
type Level string

// Levels: a failed MUST fails the run, a failed SHOULD warns (and fails the
// run in strict mode), an INFO check only reports.
const (
	LevelMust   Level = "MUST"
	LevelShould Level = "SHOULD"
	LevelInfo   Level = "INFO"
)

// Check describes one check of the catalogue. The catalogue is the one
// description of the suite: reports quote it, and docs/conformance.md and
// the CLI's list of checks are generated from it ([WriteCatalogueMarkdown],
// [WriteCatalogueText]).
type Check struct {
	// ID is the stable identifier of the check: a family (ENV, TIME, PAGE,
	// FILT, USE, REC, AUTH, HTTP), a hyphen and two digits. Baselines and
	// the Only and Skip options of [Config] name checks by it.
	ID string
	// Level is how much a failure matters.
	Level Level
	// Title says what is checked, in a few words.
	Title string
	// Sends says what requests the check sends, in a sentence or two.
	Sends string
	// Requires says what the provider's answers must satisfy for the check
	// to pass, and when the check is skipped instead.
	Requires string
	// Rule is what the check enforces: the sentences of the specification,
	// in double quotes, and where the specification leaves the question
	// open, the decision the kit takes, after "Kit decision:". It starts
	// with one or the other.
	Rule string
}

// Catalogue is every check of the suite, in report order. Ids, levels and
// titles are stable.
var Catalogue = []Check{
	// --- ENV: envelopes and schemas
	{
		ID:    "ENV-01",
		Level: LevelMust,
		Title: "list responses match the envelope schema",
		Sends: `Walks every list with limit=1000 and /usage with its default parameters, and asks one page whose ` +
			`limit equals the number of records. It then reads every 200 answer to a list endpoint the suite ` +
			`receives during the whole run: every page of every walk, the empty, filtered and far-future pages, ` +
			`and the other tenant's pages.`,
		Requires: `Every such body, exactly as received, validates against the resource's list schema: one JSON ` +
			`object in UTF-8 with exact member names given once each, data an array (never null, an empty list ` +
			`is []), hasMore a boolean, nextCursor a string or null. ERROR when no list page of the resource ` +
			`could be read at all.`,
		Rule: `"List endpoints return an envelope with data (array of records), hasMore (boolean) and nextCursor ` +
			`(opaque, retry-safe cursor)." Kit decision: the envelope is {"data": [...], "hasMore": true or false, ` +
			`"nextCursor": a string or null}, and an empty list is "data": [].`,
	},
	{
		ID:    "ENV-02",
		Level: LevelMust,
		Title: "every record matches its resource schema",
		Sends: `The requests of ENV-01, and a few conversations and assistants fetched by id (spread over the ` +
			`list, and a deleted one if there is one).`,
		Requires: `Every item of every 200 list page of the run, and every 200 answer to a single-record request, ` +
			`validates against its record schema (conversation, assistant, event or usage bucket). A finding ` +
			`about one record counts once however many pages carried it; a malformed timestamp is left to ` +
			`TIME-01 and an unknown enum value to ENV-06. SKIP when there is no record to validate.`,
		Rule: `"Identifiers and timestamps are expected on records. All other fields are optional." ` +
			`"Single-record endpoints return the record of the resource." Kit decision: the JSON Schemas of the ` +
			`kit's spec package write down the resource shapes, the normative part of the specification.`,
	},
	{
		ID:    "ENV-03",
		Level: LevelMust,
		Title: "hasMore and nextCursor agree",
		Sends: `The requests of ENV-01, including the page that ends exactly at the last record (for a list of ` +
			`more than 1000 records, a timestamp filter near its end with limit equal to the number of records ` +
			`it selects), where a provider that sets hasMore whenever a page is full goes wrong.`,
		Requires: `On every 200 list page of the run: when hasMore is true, nextCursor is a non-empty string; ` +
			`when hasMore is false, nextCursor is null (or absent).`,
		Rule: `Kit decision: nextCursor is a non-empty string when hasMore is true and null (or absent) when it ` +
			`is false, so a client follows nextCursor until hasMore is false and never meets a page with more to ` +
			`come but no way to get it.`,
	},
	{
		ID:    "ENV-04",
		Level: LevelMust,
		Title: "JSON content type on every response, errors included",
		Sends: `Nothing of its own: it reads every answer with a body that the suite receives during the run.`,
		Requires: `The Content-Type is application/json or application/problem+json (parameters such as charset ` +
			`allowed). Left out: answers without a body, 5xx answers other than 501 (HTTP-01 judges them) and ` +
			`resources the provider does not offer.`,
		Rule: `"A read-only REST/JSON API is recommended." Kit decision: every answer with a body is JSON, errors ` +
			`included: application/json, or application/problem+json for errors.`,
	},
	{
		ID:    "ENV-05",
		Level: LevelShould,
		Title: "error bodies follow the problem schema",
		Sends: `At every offered resource: limit=0 (for a 400), a request without credentials (for a 401) and, ` +
			`at /conversations and /assistants, an unknown id (for a 404).`,
		Requires: `Each 4xx answer's body validates against the problem schema (type, title, status, detail, ` +
			`and errors as a list of field and message) and its status member equals the HTTP status. An answer ` +
			`that is not a 4xx is left to PAGE-09, AUTH-01 and REC-02; SKIP when none of the requests got a 4xx.`,
		Rule: `Kit decision: errors are RFC 9457 problem details (application/problem+json) with type, title, ` +
			`status, detail and, where a field is to blame, errors: [{"field", "message"}].`,
	},
	{
		ID:    "ENV-06",
		Level: LevelShould,
		Title: "enum values known to this version",
		Sends: `The requests of ENV-02.`,
		Requires: `In every record of the run, the values of the enumerated fields ` +
			`(message role, attachment kind, assistant visibility, skill type, actor type, event category and ` +
			`action, bucket granularity) are values this version knows. An unknown value warns and never ` +
			`fails. SKIP when there is no record to look at.`,
		Rule: `"Fields and enum values may be added at any time. The consumer ignores unknown fields and never ` +
			`discards an unrecognised event type."`,
	},

	// --- TIME: timestamps
	{
		ID:    "TIME-01",
		Level: LevelMust,
		Title: "timestamps are RFC 3339 UTC with Z",
		Sends: `Nothing beyond the walks of ENV-01: it reads every record of every 200 answer of the run, list ` +
			`items and single records alike.`,
		Requires: `Every timestamp (a string member whose name ends in At, outside parameters, metadata and ` +
			`payload, which are kept as the provider's systems wrote them) is RFC 3339 in UTC with an uppercase ` +
			`T and Z: no +hh:mm or -00:00 offset, no lowercase t or z, no missing offset, no space separator. ` +
			`SKIP when no timestamp was served.`,
		Rule: `"Timestamps are RFC 3339, UTC." Kit decision: a response writes UTC as Z, never as an offset.`,
	},
	{
		ID:    "TIME-02",
		Level: LevelShould,
		Title: "one precision per field",
		Sends: `Nothing beyond the walks of ENV-01: it reads every record of every 200 answer of the run.`,
		Requires: `All values of one timestamp field at one endpoint (updatedAt, messages[].createdAt, ...) have ` +
			`the same number of fractional digits. SKIP when no timestamp was served.`,
		Rule: `Kit decision: each timestamp field is served at one precision (the kit's own provider serves ` +
			`milliseconds), so that timestamps compare the same as text and as instants.`,
	},
	{
		ID:    "TIME-03",
		Level: LevelMust,
		Title: "unparseable timestamp filters give 400",
		Sends: `At each list, its timestamp filter (updatedSince at /conversations and /assistants, occurredAfter ` +
			`at /events) set to yesterday, to 2026-13-01T00:00:00Z (month 13) and to 2026-01-01T00:00:00 (no ` +
			`offset).`,
		Requires: `Each answers 400.`,
		Rule: `"Timestamp parameters are RFC 3339, UTC." Kit decision: a known query parameter with a bad value ` +
			`is 400, and the problem names the parameter.`,
	},
	{
		ID:    "TIME-04",
		Level: LevelShould,
		Title: "an offset in a filter means the same instant",
		Sends: `At each list, its timestamp filter at an observed instant that has another record within two ` +
			`hours of it, written once with Z and once with +02:00; each is walked with a small limit across ` +
			`several pages.`,
		Requires: `Both walks answer 200 and hold the same ids in the same order; on a difference both are ` +
			`walked again once (the data may have changed) before the check fails. SKIP when no record has a ` +
			`timestamp, or when the walk with Z does not complete (the FILT checks judge that filter).`,
		Rule: `"Timestamp parameters are RFC 3339, UTC." Kit decision: a filter accepts any RFC 3339 offset and ` +
			`means the instant it names.`,
	},

	// --- PAGE: pagination and cursors
	{
		ID:    "PAGE-01",
		Level: LevelMust,
		Title: "walks end and never repeat a cursor",
		Sends: `The walk of each list with limit=1000; when it has fewer than three pages, a walk with limit=7 ` +
			`(at most 20 pages); and a few pages with limit equal to the number of records.`,
		Requires: `Every walk reaches hasMore false, and no nextCursor repeats a cursor already followed. A walk ` +
			`stopped by the page cap fails only when its last three pages brought no new record, and is SKIP ` +
			`otherwise (raise --page-cap); a walk stopped for another reason (an error answer, hasMore true ` +
			`without nextCursor) is SKIP, left to the check for that defect.`,
		Rule: `"List endpoints return an envelope with data (array of records), hasMore (boolean) and nextCursor ` +
			`(opaque, retry-safe cursor)." Kit decision: following nextCursor until hasMore is false always ends.`,
	},
	{
		ID:    "PAGE-02",
		Level: LevelMust,
		Title: "no duplicates, no gaps",
		Sends: `The walk of each list with limit=1000 and a walk with limit=1 over its first 30 records; when ` +
			`they disagree, a fresh first page (to tell live writes from a defect) and the limit=1 walk again.`,
		Requires: `No id appears twice in the walk, and the limit=1 walk holds exactly the records the large ` +
			`pages hold over the same span (records skipped at a shared timestamp are PAGE-03's). The limit=1 ` +
			`comparison is left out when cursors are not retry-safe (PAGE-05) or the list is out of order ` +
			`(PAGE-12).`,
		Rule: `Kit decision: pagination is keyset on (updatedAt, id), (occurredAt, id) for events, so no record ` +
			`is skipped or repeated whatever the page size.`,
	},
	{
		ID:    "PAGE-03",
		Level: LevelMust,
		Title: "ties on the sort key across a page boundary",
		Sends: `Finds a group of records sharing one updatedAt (occurredAt for events), the largest of at most ` +
			`300 records, and walks from just before it with limits 1, 2, half the group and the group less one, ` +
			`so that page boundaries fall inside the group.`,
		Requires: `Every walk brings every record of the group exactly once and gets past it. SKIP when no two ` +
			`records share a timestamp, when cursors are not retry-safe (PAGE-05), when paging already loses ` +
			`records elsewhere (PAGE-02) or when the list is out of order (PAGE-12).`,
		Rule: `Kit decision: the keyset includes the id, so no record is skipped or repeated when many records ` +
			`share one timestamp.`,
	},
	{
		ID:    "PAGE-04",
		Level: LevelMust,
		Title: "deterministic order",
		Sends: `A second walk of each list with limit=1000, and a third when the first two differ.`,
		Requires: `Two walks in a row give the same sequence of ids (the third walk allows for one change of the ` +
			`data between two walks). SKIP when cursors are not retry-safe (PAGE-05) or a walk does not complete.`,
		Rule: `Kit decision: conversations and assistants are ordered by (updatedAt, id) ascending, events by ` +
			`(occurredAt, id) ascending, ids compared byte by byte, so the same data always comes in the same ` +
			`order.`,
	},
	{
		ID:    "PAGE-05",
		Level: LevelMust,
		Title: "a cursor is retry-safe",
		Sends: `A first page with a small limit (a third of the list, at most 10), the page of its nextCursor, ` +
			`that cursor again at once, the page after it, and the first cursor once more.`,
		Requires: `Each replay of the cursor gives the same ids in the same order (when the first page itself has ` +
			`changed meanwhile, the data is live: SKIP). SKIP with fewer than two records.`,
		Rule: `"List endpoints return an envelope with data (array of records), hasMore (boolean) and nextCursor ` +
			`(opaque, retry-safe cursor)." Kit decision: the same cursor gives the same ` +
			`page while the data is unchanged, however often and however late it is sent.`,
	},
	{
		ID:    "PAGE-06",
		Level: LevelMust,
		Title: "malformed cursors give 400",
		Sends: `At every resource, /usage included, the nextCursor of the first page with limit=1 altered: ` +
			`garbage, truncated, one character changed, empty, 8 KiB long, with a NUL byte, with quotes ` +
			`(made-up cursors of the same kinds when the list has a single page and no cursor to alter). Each ` +
			`is URL-encoded.`,
		Requires: `Each answers 400 (414 or 431 also do for the 8 KiB cursor): never a page (such as the first ` +
			`page again), never a 5xx.`,
		Rule: `Kit decision: a cursor the provider did not issue, or cannot decode, is 400.`,
	},
	{
		ID:    "PAGE-07",
		Level: LevelShould,
		Title: "a cursor is bound to its endpoint",
		Sends: `At every resource, /usage included, a nextCursor issued by another endpoint (from its first page ` +
			`with limit=1).`,
		Requires: `The foreign cursor answers 400. SKIP when no other endpoint offered a cursor.`,
		Rule:     `Kit decision: a cursor carries its endpoint; another endpoint's cursor is 400.`,
	},
	{
		ID:    "PAGE-08",
		Level: LevelShould,
		Title: "a cursor is bound to its filters",
		Sends: `At each list, the nextCursor of the unfiltered first page with limit=1, sent again with ` +
			`updatedSince (occurredAfter at /events) set to 1970-01-01T00:00:00Z.`,
		Requires: `The cursor with the changed filters answers 400. SKIP when the first page offered no ` +
			`nextCursor.`,
		Rule: `Kit decision: a client sends a cursor together with the same filters as the request that returned ` +
			`it; a changed or missing filter is 400 (limit may change from page to page).`,
	},
	{
		ID:    "PAGE-09",
		Level: LevelMust,
		Title: "the page size is honoured and bounded",
		Sends: `At each list, pages with limit=1, limit=7 and no limit, and with limit=0, limit=-1 and ` +
			`limit=1001; it also reads every page the suite received with a limit during the run.`,
		Requires: `Every 200 page asked with a limit from 1 to 1000 holds at most limit records, and a page ` +
			`without a limit at most 1000; limit 0, -1 and 1001 answer 400, or 200 with a page of at most 1000 ` +
			`records (clamped); never a 5xx.`,
		Rule: `Kit decision: the page size is the query parameter limit, default 100, from 1 to 1000; outside ` +
			`that range it is 400.`,
	},
	{
		ID:    "PAGE-10",
		Level: LevelShould,
		Title: "cursors are opaque",
		Sends: `Nothing of its own: it looks at up to five cursors of the walk with limit=1000 and at the cursor ` +
			`of the first page with limit=1.`,
		Requires: `No cursor, as it is or base64-decoded (standard or URL alphabet, padded or not), reads as JSON ` +
			`or as a bare integer. SKIP when no page offered a cursor.`,
		Rule: `"List endpoints return an envelope with data (array of records), hasMore (boolean) and nextCursor ` +
			`(opaque, retry-safe cursor)." Kit decision: cursors are opaque base64url, so clients ` +
			`neither build nor edit them.`,
	},
	{
		ID:    "PAGE-11",
		Level: LevelInfo,
		Title: "empty page with hasMore true",
		Sends: `Nothing of its own: it counts the pages of the walks with limit=1000.`,
		Requires: `Reported only: how many pages were empty yet said hasMore true. Such pages are allowed; a walk ` +
			`that never ends because of them fails PAGE-01.`,
		Rule: `"List endpoints return an envelope with data (array of records), hasMore (boolean) and nextCursor ` +
			`(opaque, retry-safe cursor)."`,
	},
	{
		ID:    "PAGE-12",
		Level: LevelMust,
		Title: "lists are in keyset order",
		Sends: `Nothing beyond the walk of each list with limit=1000.`,
		Requires: `Across all pages, records ascend strictly by (updatedAt, id) at /conversations and ` +
			`/assistants and by (occurredAt, id) at /events, ids compared byte by byte. Records without an id ` +
			`or a parseable timestamp are left out. SKIP when the walk did not complete.`,
		Rule: `Kit decision: conversations and assistants are ordered by (updatedAt, id) ascending, events by ` +
			`(occurredAt, id) ascending; ids compare byte by byte.`,
	},

	// --- FILT: filters
	{
		ID:    "FILT-01",
		Level: LevelMust,
		Title: "filter bounds hold",
		Sends: `Each filter (updatedSince and startedAfter at /conversations, updatedSince at /assistants, ` +
			`occurredAfter at /events) and each combination the specification allows (updatedSince with ` +
			`startedAfter at /conversations, occurredAfter with category at /events), walked with a limit small ` +
			`enough to cross at least three pages. Each bound is a value observed in the data, chosen so that, ` +
			`when the data has any, records outside the bound follow the first page in keyset order: a cursor ` +
			`that forgets the filter after page 1 shows.`,
		Requires: `Every record of every page meets every bound: updatedAt at or after updatedSince, startedAt ` +
			`after startedAfter, occurredAt after occurredAfter (a record of another category is FILT-04's); ` +
			`an inclusive bound also keeps the records exactly at it. When the data is too small for three ` +
			`pages the message says so; SKIP when no record has the field to filter on.`,
		Rule: `"updatedSince applies to conversations and assistants. occurredAfter applies to events." Kit ` +
			`decision: updatedSince is inclusive (>=), startedAfter and occurredAfter are exclusive (>), and ` +
			`filters given together all apply.`,
	},
	{
		ID:    "FILT-02",
		Level: LevelMust,
		Title: "filtered results are complete",
		Sends: `The filtered walks of FILT-01, and the unfiltered walk of each list.`,
		Requires: `Each filtered walk holds every record of the unfiltered walk that matches its bounds, so that, ` +
			`with FILT-01, it is exactly the matching subset. Records exactly at an inclusive bound are ` +
			`FILT-01's, and records left out only where they share a timestamp with another are PAGE-03's. ` +
			`A later page that refuses the nextCursor of the page before it, sent back with the same ` +
			`filters, fails. When the data is too small for three pages the message says so; SKIP when a ` +
			`walk stops otherwise (a 5xx, no answer, the page cap).`,
		Rule: `"Incremental filters updatedSince and occurredAfter." Kit decision: a filtered list returns every ` +
			`matching record, on every page, so an incremental sync misses nothing.`,
	},
	{
		ID:    "FILT-03",
		Level: LevelMust,
		Title: "a far-future bound is an empty 200",
		Sends: `Each timestamp filter of each list set to 2999-01-01T00:00:00Z.`,
		Requires: `200 with a valid list envelope whose data is exactly [] (not null, not absent) and whose ` +
			`hasMore is false.`,
		Rule: `Kit decision: a filter that matches nothing is not an error: it answers 200 with "data": [] and ` +
			`"hasMore": false.`,
	},
	{
		ID:    "FILT-04",
		Level: LevelMust,
		Title: "category filters events",
		Sends: `/events?category=C for every category of this version, each walked with a limit small enough ` +
			`to cross at least three pages where the data allows, and category=NoSuchCategory; it also judges ` +
			`the category of the occurredAfter with category walk of FILT-01.`,
		Requires: `Every record of every page has the category asked; together the walks hold every event of ` +
			`the unfiltered walk whose category is known; no later page refuses the nextCursor of the page ` +
			`before it; the unknown category answers 400, or 200 with "data": []; never a 5xx.`,
		Rule: `"category takes the event category values."`,
	},
	{
		ID:    "FILT-05",
		Level: LevelInfo,
		Title: "unknown, wrongly cased or repeated query parameters",
		Sends: `At each list, ?foo=bar, ?LIMIT=1 and ?limit=1&limit=2.`,
		Requires: `Reported only: whether each is ignored or refused, and which value of a repeated parameter is ` +
			`taken. A 5xx warns.`,
		Rule: `Kit decision: unknown query parameters are ignored; a known one with a bad value is 400, naming ` +
			`it.`,
	},

	// --- USE: usage
	{
		ID:    "USE-01",
		Level: LevelMust,
		Title: "usage buckets are aligned and inside the range",
		Sends: `/usage over the 7 days, on UTC day boundaries, that end after the latest conversation (or the ` +
			`current days when those hold no usage), with granularity=day and granularity=hour; each query is ` +
			`walked with limit=1000 (without limit when the provider refuses it) and again with a small limit ` +
			`across several pages.`,
		Requires: `Every bucket of every page starts on a UTC boundary of its granularity, lasts exactly one ` +
			`granularity (endAt - startAt), names the granularity asked, and lies inside the range [startAt, ` +
			`endAt) asked. SKIP when the range holds no bucket.`,
		Rule: `"granularity is hour or day." Kit decision: the range is half-open, [startAt, endAt), rounded to ` +
			`the granularity's UTC boundaries, and each bucket covers one granularity.`,
	},
	{
		ID:    "USE-02",
		Level: LevelMust,
		Title: "groupBy is honoured",
		Sends: `Daily /usage over the range of USE-01 without groupBy and with groupBy=model, department, ` +
			`model,department and all four dimensions; each query is walked with limit=1000 and again with a ` +
			`small limit across several pages.`,
		Requires: `Every bucket of every page has dimensions with exactly the grouped keys (none without ` +
			`groupBy). SKIP when the range holds no bucket.`,
		Rule: `"Grouping keys present, any subset of model, assistantId, userId, department (all strings)." Kit ` +
			`decision: groupBy is a comma-separated subset of those four keys.`,
	},
	{
		ID:    "USE-03",
		Level: LevelShould,
		Title: "grouped sums equal ungrouped totals",
		Sends: `The walks of USE-02.`,
		Requires: `For each bucket start, requests, inputTokens, outputTokens and cost summed over the groups of ` +
			`each grouped query equal the ungrouped bucket (integers exactly, cost within one part in a ` +
			`million). A metric one side leaves out is not compared; a bucket left out counts as zero. SKIP ` +
			`when there is nothing to compare.`,
		Rule: `"Aggregated, time-bucketed usage." Kit decision: grouping splits the same usage, so the requests, ` +
			`tokens and cost of the groups add up to the ungrouped totals (distinct counts such as activeUsers ` +
			`need not).`,
	},
	{
		ID:    "USE-04",
		Level: LevelMust,
		Title: "bad usage parameters give 400",
		Sends: `/usage with granularity=week, with groupBy=team, with endAt a day before startAt, with ` +
			`granularity=hour over 40 days and with granularity=day over 400 days.`,
		Requires: `Each answers 400.`,
		Rule: `"granularity is hour or day." Kit decision: groupBy is a subset of model, assistantId, userId ` +
			`and department, endAt comes after startAt, and a range is at most 31 days for hour and 366 days ` +
			`for day; anything else is 400.`,
	},

	// --- REC: single records
	{
		ID:    "REC-01",
		Level: LevelMust,
		Title: "a single record equals its list item",
		Sends: `GET /conversations/{id} and /assistants/{id} for up to 20 records spread over the list; for a ` +
			`record that changed since the walk, the record again and the list filtered by updatedSince to find ` +
			`its current item.`,
		Requires: `200 with a JSON object equal, member by member, to its list item. A record that changed during ` +
			`the run is not compared. SKIP when the list is empty.`,
		Rule: `"Single-record endpoints return the record of the resource."`,
	},
	{
		ID:       "REC-02",
		Level:    LevelMust,
		Title:    "an unknown id is 404",
		Sends:    `GET /conversations/{id} and /assistants/{id} with a random UUID and with a random string.`,
		Requires: `Both answer 404.`,
		Rule:     `Kit decision: an id that names no record of the customer is 404.`,
	},
	{
		ID:    "REC-03",
		Level: LevelMust,
		Title: "hostile ids do not crash",
		Sends: `GET /conversations/{id} and /assistants/{id} with ids that are a slash (sent as %2F), an embedded ` +
			`slash, the text %2F, dots inside (a..b), 4 KiB long, unicode, quotes, SQL-like quotes, a NUL byte and a percent sign, ` +
			`each path-escaped. Dot segments (. and ..) are not sent: URL path normalisation (RFC 3986 section ` +
			`5.2.4) removes them before any router sees them, so no record can be addressed by them, and most ` +
			`HTTP servers answer them with a redirect to the cleaned path.`,
		Requires: `Each answers 400 or 404 (414 also does for the 4 KiB id; 200 only with a record whose id is ` +
			`exactly the one asked): never a 5xx, never a dropped connection.`,
		Rule: `Kit decision: nothing a client sends may cause a 5xx, and an id that names no record is 404.`,
	},
	{
		ID:    "REC-04",
		Level: LevelMust,
		Title: "a deleted conversation is a tombstone",
		Sends: `The walk of /conversations with limit=1000, and up to 20 of its deleted conversations fetched by ` +
			`id.`,
		Requires: `A conversation with deletedAt carries no messages, systemPrompt or attachments, its updatedAt ` +
			`is not before its deletedAt, and by id it answers 200 with deletedAt and no content. SKIP when no ` +
			`conversation has deletedAt.`,
		Rule: `"A conversation is deleted when deletedAt is present." Kit decision: a deleted conversation stays ` +
			`listed as a tombstone, with deletedAt set, updatedAt bumped and content fields dropped, and by id ` +
			`it answers 200 with deletedAt.`,
	},

	// --- AUTH: credentials, scopes and tenants
	{
		ID:    "AUTH-01",
		Level: LevelMust,
		Title: "credentials required everywhere",
		Sends: `Without any credential: the first page of every list and /usage, and one record of ` +
			`/conversations and of /assistants by id.`,
		Requires: `Each answers 401.`,
		Rule: `"A single credential per customer, either a bearer token or an API key." Kit decision: a request ` +
			`without a credential is 401 on every endpoint.`,
	},
	{
		ID:    "AUTH-02",
		Level: LevelMust,
		Title: "a 401 carries a challenge",
		Sends: `The requests of AUTH-01, and the first page of every list and /usage with a bearer token the ` +
			`provider cannot know.`,
		Requires: `The unknown token answers 401 too, and every one of these 401 answers carries a ` +
			`WWW-Authenticate header with the Bearer scheme.`,
		Rule: `Kit decision: a missing or unknown credential is 401 with WWW-Authenticate: Bearer.`,
	},
	{
		ID:    "AUTH-03",
		Level: LevelMust,
		Title: "scopes are enforced",
		Sends: `The first page of every offered resource with the token of --token-without-usage, which has ` +
			`every scope but read:usage (a usage-only token is its opposite: the failures say so).`,
		Requires: `/usage answers 403 and every other resource 200. SKIP without that token, or when it is ` +
			`refused everywhere.`,
		Rule: `"Optional per-resource scopes, for example read:usage and read:conversations, let a customer ` +
			`share usage metrics without conversation content." Kit decision: a credential without the ` +
			`resource's scope gets 403.`,
	},
	{
		ID:    "AUTH-04",
		Level: LevelMust,
		Title: "cursors confer no authority",
		Sends: `At every resource, the first page with limit=2 (at /usage an hourly range) and its nextCursor ` +
			`replayed without credentials; with the other tenant's token configured, the cursor replayed with ` +
			`the token and with the other tenant's token.`,
		Requires: `The replay without credentials answers 401; the replay with the other tenant's token shows ` +
			`none of the first tenant's records (nor, at /usage, the first tenant's page). SKIP when the first ` +
			`page is the only one, or when the endpoint answers without credentials anyway (AUTH-01).`,
		Rule: `"It is scoped to that customer's data only." Kit decision: a cursor carries its tenant; only the ` +
			`credential decides whose data is read.`,
	},
	{
		ID:    "AUTH-05",
		Level: LevelShould,
		Title: "no credentials in the query string",
		Sends: `The first page of every resource with the token in ?access_token= and, separately, in ` +
			`?api_key=, with no credential header. The reports mask the value.`,
		Requires: `Both answer 401. SKIP where the endpoint answers without credentials anyway (AUTH-01).`,
		Rule: `Kit decision: credentials travel only in the Authorization: Bearer or X-API-Key header, never in ` +
			`the URL, which logs and proxies keep.`,
	},
	{
		ID:    "AUTH-06",
		Level: LevelMust,
		Title: "both header forms work",
		Sends: `At every list, the first three pages with a limit of a third of the list, walked with ` +
			`Authorization: Bearer and again with X-API-Key (at /usage, the first page); then the first page ` +
			`with a right X-API-Key and a wrong bearer token, and with a right bearer token and a wrong ` +
			`X-API-Key.`,
		Requires: `The two walks hold the same records (once more on a difference, for live writes); with both ` +
			`headers the X-API-Key decides: a right one answers 200, a wrong one is refused. SKIP when the ` +
			`bearer token itself is refused.`,
		Rule: `"A single credential per customer, either a bearer token or an API key." Kit decision: the ` +
			`credential is sent as Authorization: Bearer TOKEN or as X-API-Key: TOKEN; when both are present, ` +
			`X-API-Key wins.`,
	},
	{
		ID:    "AUTH-07",
		Level: LevelMust,
		Title: "another tenant's records are invisible",
		Sends: `With the other tenant's token (--other-tenant-token): the whole of each list, every page, ` +
			`walked with limit=1000 and again with a limit small enough for three pages; and up to 10 of the ` +
			`first tenant's conversations and assistants by id.`,
		Requires: `No page holds a record of the first tenant (the same id with the same content: ids may repeat ` +
			`across tenants), and the first tenant's ids answer 404 (or 200 with the other tenant's own, ` +
			`different record). SKIP without that token, or when it is refused.`,
		Rule: `"It is scoped to that customer's data only."`,
	},

	// --- HTTP: HTTP behaviour
	{
		ID:       "HTTP-01",
		Level:    LevelMust,
		Title:    "no 5xx anywhere in the run",
		Sends:    `Nothing of its own: it looks at every answer of the run.`,
		Requires: `No answer is a 5xx other than 501 (with which a provider says it does not offer a resource).`,
		Rule:     `Kit decision: nothing a client sends may cause a 5xx, and a 500 never shows internals.`,
	},
	{
		ID:    "HTTP-02",
		Level: LevelShould,
		Title: "read-only",
		Sends: `POST, PUT, PATCH and DELETE (Content-Type: application/json, no body) to the path of every ` +
			`offered resource.`,
		Requires: `None answers 2xx; each answers 405 with an Allow header naming GET, or 401, or 404.`,
		Rule:     `"Access is strictly read-only."`,
	},
	{
		ID:    "HTTP-03",
		Level: LevelShould,
		Title: "rate limiting is well formed",
		Sends: `Nothing of its own: the suite sends at most --rate requests per second, and on a 429 waits as ` +
			`Retry-After says (at most a minute) and sends the request again, up to 8 times.`,
		Requires: `Every 429 answer of the run carries Retry-After.`,
		Rule:     `Kit decision: a 429 carries Retry-After, so that a client knows when to come back.`,
	},
	{
		ID:    "HTTP-04",
		Level: LevelMust,
		Title: "every resource is served or said not offered",
		Sends: `Nothing of its own: it looks at the first request of the run to each resource (the first page ` +
			`of each list, /usage with no parameters).`,
		Requires: `Each resource is served, and checked. A provider that does not offer one answers 501: a WARN ` +
			`(it fails no run, not even with --strict) that counts the checks not run there. A 404 is a FAIL: ` +
			`the resources are those of the specification, and a 404 is what a routing bug answers. SKIP for a ` +
			`resource left out by --resources.`,
		Rule: `Kit decision: every resource appears in every report; a provider that does not offer one says so ` +
			`with 501, as the provider guide tells vendors to.`,
	},
}

// checksAt lists, per resource, the checks that report at its endpoint
// (besides HTTP-04) when the provider offers it, in catalogue order.
var checksAt = func() map[string][]string {
	all := []string{"ENV-01", "ENV-02", "ENV-03", "ENV-04", "ENV-05", "ENV-06"}
	lists := []string{"TIME-01", "TIME-02", "TIME-03", "TIME-04",
		"PAGE-01", "PAGE-02", "PAGE-03", "PAGE-04", "PAGE-05", "PAGE-06", "PAGE-07", "PAGE-08", "PAGE-09",
		"PAGE-10", "PAGE-11", "PAGE-12", "FILT-01", "FILT-02", "FILT-03"}
	auth := []string{"AUTH-01", "AUTH-02", "AUTH-03", "AUTH-04", "AUTH-05", "AUTH-06"}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	return map[string][]string{
		Conversations: cat(all, lists, []string{"FILT-05", "REC-01", "REC-02", "REC-03", "REC-04"}, auth, []string{"AUTH-07", "HTTP-02"}),
		Assistants:    cat(all, lists, []string{"FILT-05", "REC-01", "REC-02", "REC-03"}, auth, []string{"AUTH-07", "HTTP-02"}),
		Events:        cat(all, lists, []string{"FILT-04", "FILT-05"}, auth, []string{"AUTH-07", "HTTP-02"}),
		Usage:         cat(all, []string{"TIME-01", "TIME-02", "PAGE-06", "PAGE-07", "USE-01", "USE-02", "USE-03", "USE-04"}, auth, []string{"HTTP-02"}),
	}
}()

// ChecksAt returns the ids of the checks that report at the endpoint of
// resource (one of [AllResources]) when the provider offers it, HTTP-04
// aside, in catalogue order: those a resource not offered leaves unrun.
func ChecksAt(resource string) []string {
	return append([]string(nil), checksAt[resource]...)
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
