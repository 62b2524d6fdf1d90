-- provider/sqlsource on SQLite. Times are milliseconds since the Unix epoch
-- (UTC). Text compares with SQLite's default BINARY collation: byte by byte,
-- the order the AI usage data interface serves. body is the record's
-- canonical JSON, served as stored.

CREATE TABLE conversations (
	tenant     TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	updated_at INTEGER NOT NULL, -- updatedAt, or startedAt when absent
	started_at INTEGER NOT NULL,
	deleted    INTEGER NOT NULL DEFAULT 0,
	body       TEXT    NOT NULL,
	PRIMARY KEY (tenant, id)
);
CREATE INDEX conversations_tenant_updated ON conversations (tenant, updated_at, id);

CREATE TABLE assistants (
	tenant     TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	updated_at INTEGER NOT NULL, -- updatedAt, or createdAt when absent
	created_at INTEGER NOT NULL,
	body       TEXT    NOT NULL,
	PRIMARY KEY (tenant, id)
);
CREATE INDEX assistants_tenant_updated ON assistants (tenant, updated_at, id);

CREATE TABLE events (
	tenant      TEXT    NOT NULL,
	id          TEXT    NOT NULL,
	occurred_at INTEGER NOT NULL,
	category    TEXT    NOT NULL DEFAULT '',
	body        TEXT    NOT NULL,
	PRIMARY KEY (tenant, id)
);
CREATE INDEX events_tenant_occurred ON events (tenant, occurred_at, id);
CREATE INDEX events_tenant_category_occurred ON events (tenant, category, occurred_at, id);

-- One row per AI request: the record of what was written, and what keeps
-- request ids unique per tenant. /usage reads usage_rollups instead.
CREATE TABLE usage_records (
	tenant          TEXT    NOT NULL,
	id              TEXT    NOT NULL,
	at              INTEGER NOT NULL,
	conversation_id TEXT    NOT NULL DEFAULT '',
	user_id         TEXT    NOT NULL DEFAULT '',
	department      TEXT    NOT NULL DEFAULT '',
	model           TEXT    NOT NULL DEFAULT '',
	assistant_id    TEXT    NOT NULL DEFAULT '',
	input_tokens    INTEGER NOT NULL DEFAULT 0,
	output_tokens   INTEGER NOT NULL DEFAULT 0,
	cost            REAL    NOT NULL DEFAULT 0,
	PRIMARY KEY (tenant, id)
) WITHOUT ROWID;

-- usage_records summed per bucket (width 3600000: hour, 86400000: day, in
-- milliseconds) and per combination of the dimensions and the conversation,
-- written in the same transaction as each usage_records row. /usage
-- aggregates these cells instead of the requests: fewer rows, and, for the
-- groupings that are a prefix of (model, department, assistant_id,
-- user_id), read in group order without a sort. Keeping conversation_id
-- and user_id in the key keeps the distinct counts exact.
CREATE TABLE usage_rollups (
	tenant          TEXT    NOT NULL,
	width           INTEGER NOT NULL,
	bucket          INTEGER NOT NULL,
	model           TEXT    NOT NULL,
	department      TEXT    NOT NULL,
	assistant_id    TEXT    NOT NULL,
	user_id         TEXT    NOT NULL,
	conversation_id TEXT    NOT NULL,
	requests        INTEGER NOT NULL,
	input_tokens    INTEGER NOT NULL,
	output_tokens   INTEGER NOT NULL,
	cost            REAL    NOT NULL,
	PRIMARY KEY (tenant, width, bucket, model, department, assistant_id, user_id, conversation_id)
) WITHOUT ROWID;

-- The revision of each tenant's conversations, assistants and events: a
-- random number set anew by every write to them, in the write's
-- transaction. A cached page is served again only while it is unchanged.
CREATE TABLE provider_revisions (
	tenant   TEXT NOT NULL,
	resource TEXT NOT NULL,
	rev      BIGINT NOT NULL,
	PRIMARY KEY (tenant, resource)
) WITHOUT ROWID;

CREATE TABLE provider_settings (
	name  TEXT NOT NULL PRIMARY KEY,
	value TEXT NOT NULL
);
