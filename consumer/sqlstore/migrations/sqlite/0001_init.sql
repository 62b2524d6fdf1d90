-- consumer/sqlstore on SQLite. Every table is prefixed consumer_, so the
-- store can share a database with provider/sqlsource. Times are
-- milliseconds since the Unix epoch (UTC). Text compares with SQLite's
-- default BINARY collation: byte by byte, the order the AI usage data
-- interface serves.

-- One table for the records of the four resources: the engine, the sweep,
-- Status and Export treat them alike, and a page is one multi-row upsert.
-- Columns a resource does not use keep their defaults.
CREATE TABLE consumer_records (
	source        TEXT    NOT NULL,
	resource      TEXT    NOT NULL,
	id            TEXT    NOT NULL,
	-- The record's Time (updatedAt, occurredAt, a usage bucket's startAt):
	-- what an upsert compares.
	time_ms       INTEGER NOT NULL,
	-- The list position in the collected view: time_ms, except for a
	-- conversation marked missing, served as a tombstone at missing_at,
	-- and for one that came back since: its position never moves back, so
	-- it may stay later than time_ms (and is served updated at pos_ms).
	-- Never below time_ms unless marked missing; equal to it for the other
	-- resources.
	pos_ms        INTEGER NOT NULL,
	started_ms    INTEGER NOT NULL DEFAULT 0,
	deleted       INTEGER NOT NULL DEFAULT 0,
	category      TEXT    NOT NULL DEFAULT '',
	run           INTEGER NOT NULL,
	missing_at    INTEGER, -- ms; NULL unless a full re-pull missed the record
	body          TEXT    NOT NULL,
	-- Usage buckets: the key (start is time_ms) and the metrics.
	granularity   TEXT    NOT NULL DEFAULT '',
	end_ms        INTEGER NOT NULL DEFAULT 0,
	grouped       TEXT    NOT NULL DEFAULT '', -- grouped dimensions, comma separated
	model         TEXT    NOT NULL DEFAULT '',
	assistant_id  TEXT    NOT NULL DEFAULT '',
	user_id       TEXT    NOT NULL DEFAULT '',
	department    TEXT    NOT NULL DEFAULT '',
	requests      INTEGER NOT NULL DEFAULT 0,
	conversations INTEGER NOT NULL DEFAULT 0,
	active_users  INTEGER NOT NULL DEFAULT 0,
	input_tokens  INTEGER NOT NULL DEFAULT 0,
	output_tokens INTEGER NOT NULL DEFAULT 0,
	cost          REAL    NOT NULL DEFAULT 0,
	PRIMARY KEY (source, resource, id)
);
-- Keyset pages of the collected view and Export.
CREATE INDEX consumer_records_pos ON consumer_records (source, resource, pos_ms, id);
-- Usage buckets in provider.UsageKey order: Export and Usage.
CREATE INDEX consumer_records_usage ON consumer_records (source, time_ms, model, assistant_id, user_id, department, id)
	WHERE resource = 'usage';
-- Status counts the records marked Missing: few, so a small index.
CREATE INDEX consumer_records_missing ON consumer_records (source, resource, missing_at) WHERE missing_at IS NOT NULL;

CREATE TABLE consumer_checkpoints (
	source              TEXT    NOT NULL,
	resource            TEXT    NOT NULL,
	run                 INTEGER NOT NULL DEFAULT 0,
	cursor_token        TEXT    NOT NULL DEFAULT '',
	in_progress         INTEGER NOT NULL DEFAULT 0,
	full_repull         INTEGER NOT NULL DEFAULT 0,
	since_ms            INTEGER, -- NULL: the zero time
	until_ms            INTEGER,
	watermark_ms        INTEGER,
	needs_full          INTEGER NOT NULL DEFAULT 0,
	needs_full_reason   TEXT    NOT NULL DEFAULT '',
	pages               INTEGER NOT NULL DEFAULT 0,
	records             INTEGER NOT NULL DEFAULT 0,
	last_success_ms     INTEGER,
	last_error          TEXT    NOT NULL DEFAULT '',
	last_error_at_ms    INTEGER,
	started_ms          INTEGER, -- when the walk in progress (or the last) started, by the poller's clock
	needs_full_since_ms INTEGER, -- since when needs_full holds
	last_full_ms        INTEGER, -- when a full walk last ended complete
	PRIMARY KEY (source, resource)
) WITHOUT ROWID;

CREATE TABLE consumer_leases (
	source     TEXT    NOT NULL,
	resource   TEXT    NOT NULL,
	owner      TEXT    NOT NULL,
	expires_ms INTEGER NOT NULL,
	PRIMARY KEY (source, resource)
) WITHOUT ROWID;

CREATE TABLE consumer_quarantine (
	source   TEXT    NOT NULL,
	resource TEXT    NOT NULL,
	id       TEXT    NOT NULL,
	reason   TEXT    NOT NULL,
	at_ms    INTEGER NOT NULL,
	body     BLOB    NOT NULL, -- the record exactly as received: not always valid UTF-8
	PRIMARY KEY (source, resource, id)
);
CREATE INDEX consumer_quarantine_at ON consumer_quarantine (at_ms);
