-- consumer/sqlstore on PostgreSQL. Every table is prefixed consumer_, so the
-- store can share a database with provider/sqlsource. Times are
-- milliseconds since the Unix epoch (UTC), exact and the same on both
-- dialects. Ids, names and usage dimensions use COLLATE "C", so they compare
-- byte by byte, the order the AI usage data interface serves.

-- One table for the records of the four resources: the engine, the sweep,
-- Status and Export treat them alike, and a page is one multi-row upsert.
-- Columns a resource does not use keep their defaults. toast_tuple_target
-- keeps rows of up to 8 KB (a typical record is about 2 KB) inline and
-- uncompressed: writing a page then compresses nothing, and reading one
-- reads no TOAST table.
CREATE TABLE consumer_records (
	source        TEXT COLLATE "C" NOT NULL,
	resource      TEXT COLLATE "C" NOT NULL,
	id            TEXT COLLATE "C" NOT NULL,
	-- The record's Time (updatedAt, occurredAt, a usage bucket's startAt):
	-- what an upsert compares.
	time_ms       BIGINT  NOT NULL,
	-- The list position in the collected view: time_ms, except for a
	-- conversation marked missing, served as a tombstone at missing_at,
	-- and for one that came back since: its position never moves back, so
	-- it may stay later than time_ms (and is served updated at pos_ms).
	-- Never below time_ms unless marked missing; equal to it for the other
	-- resources.
	pos_ms        BIGINT  NOT NULL,
	started_ms    BIGINT  NOT NULL DEFAULT 0,
	deleted       BOOLEAN NOT NULL DEFAULT FALSE,
	category      TEXT COLLATE "C" NOT NULL DEFAULT '',
	run           BIGINT  NOT NULL,
	missing_at    BIGINT, -- ms; NULL unless a full re-pull missed the record
	body          TEXT    NOT NULL,
	-- Usage buckets: the key (start is time_ms) and the metrics.
	granularity   TEXT COLLATE "C" NOT NULL DEFAULT '',
	end_ms        BIGINT  NOT NULL DEFAULT 0,
	grouped       TEXT COLLATE "C" NOT NULL DEFAULT '', -- grouped dimensions, comma separated
	model         TEXT COLLATE "C" NOT NULL DEFAULT '',
	assistant_id  TEXT COLLATE "C" NOT NULL DEFAULT '',
	user_id       TEXT COLLATE "C" NOT NULL DEFAULT '',
	department    TEXT COLLATE "C" NOT NULL DEFAULT '',
	requests      BIGINT  NOT NULL DEFAULT 0,
	conversations BIGINT  NOT NULL DEFAULT 0,
	active_users  BIGINT  NOT NULL DEFAULT 0,
	input_tokens  BIGINT  NOT NULL DEFAULT 0,
	output_tokens BIGINT  NOT NULL DEFAULT 0,
	cost          DOUBLE PRECISION NOT NULL DEFAULT 0,
	PRIMARY KEY (source, resource, id)
) WITH (toast_tuple_target = 8160);
-- Keyset pages of the collected view and Export.
CREATE INDEX consumer_records_pos ON consumer_records (source, resource, pos_ms, id);
-- Usage buckets in provider.UsageKey order: Export and Usage.
CREATE INDEX consumer_records_usage ON consumer_records (source, time_ms, model, assistant_id, user_id, department, id)
	WHERE resource = 'usage';
-- Status counts the records marked Missing: few, so a small index.
CREATE INDEX consumer_records_missing ON consumer_records (source, resource, missing_at) WHERE missing_at IS NOT NULL;

CREATE TABLE consumer_checkpoints (
	source              TEXT COLLATE "C" NOT NULL,
	resource            TEXT COLLATE "C" NOT NULL,
	run                 BIGINT  NOT NULL DEFAULT 0,
	cursor_token        TEXT    NOT NULL DEFAULT '',
	in_progress         BOOLEAN NOT NULL DEFAULT FALSE,
	full_repull         BOOLEAN NOT NULL DEFAULT FALSE,
	since_ms            BIGINT, -- NULL: the zero time
	until_ms            BIGINT,
	watermark_ms        BIGINT,
	needs_full          BOOLEAN NOT NULL DEFAULT FALSE,
	needs_full_reason   TEXT    NOT NULL DEFAULT '',
	pages               BIGINT  NOT NULL DEFAULT 0,
	records             BIGINT  NOT NULL DEFAULT 0,
	last_success_ms     BIGINT,
	last_error          TEXT    NOT NULL DEFAULT '',
	last_error_at_ms    BIGINT,
	started_ms          BIGINT, -- when the walk in progress (or the last) started, by the poller's clock
	needs_full_since_ms BIGINT, -- since when needs_full holds
	last_full_ms        BIGINT, -- when a full walk last ended complete
	PRIMARY KEY (source, resource)
);

CREATE TABLE consumer_leases (
	source     TEXT COLLATE "C" NOT NULL,
	resource   TEXT COLLATE "C" NOT NULL,
	owner      TEXT COLLATE "C" NOT NULL,
	expires_ms BIGINT NOT NULL,
	PRIMARY KEY (source, resource)
);

CREATE TABLE consumer_quarantine (
	source   TEXT COLLATE "C" NOT NULL,
	resource TEXT COLLATE "C" NOT NULL,
	id       TEXT COLLATE "C" NOT NULL,
	reason   TEXT   NOT NULL,
	at_ms    BIGINT NOT NULL,
	body     BYTEA NOT NULL, -- the record exactly as received: not always valid UTF-8
	PRIMARY KEY (source, resource, id)
);
CREATE INDEX consumer_quarantine_at ON consumer_quarantine (at_ms);
