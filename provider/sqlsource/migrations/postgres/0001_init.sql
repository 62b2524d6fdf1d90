-- provider/sqlsource on PostgreSQL. Times are milliseconds since the Unix
-- epoch (UTC), exact and the same on both dialects. Ids and usage dimensions
-- use COLLATE "C", so they compare byte by byte, the order the AI usage data
-- interface serves. body is the record's canonical JSON, served as stored.

CREATE TABLE conversations (
	tenant     TEXT COLLATE "C" NOT NULL,
	id         TEXT COLLATE "C" NOT NULL,
	updated_at BIGINT  NOT NULL, -- updatedAt, or startedAt when absent
	started_at BIGINT  NOT NULL,
	deleted    BOOLEAN NOT NULL DEFAULT FALSE,
	body       TEXT    NOT NULL,
	PRIMARY KEY (tenant, id)
);
CREATE INDEX conversations_tenant_updated ON conversations (tenant, updated_at, id);

CREATE TABLE assistants (
	tenant     TEXT COLLATE "C" NOT NULL,
	id         TEXT COLLATE "C" NOT NULL,
	updated_at BIGINT NOT NULL, -- updatedAt, or createdAt when absent
	created_at BIGINT NOT NULL,
	body       TEXT   NOT NULL,
	PRIMARY KEY (tenant, id)
);
CREATE INDEX assistants_tenant_updated ON assistants (tenant, updated_at, id);

CREATE TABLE events (
	tenant      TEXT COLLATE "C" NOT NULL,
	id          TEXT COLLATE "C" NOT NULL,
	occurred_at BIGINT NOT NULL,
	category    TEXT COLLATE "C" NOT NULL DEFAULT '',
	body        TEXT   NOT NULL,
	PRIMARY KEY (tenant, id)
);
CREATE INDEX events_tenant_occurred ON events (tenant, occurred_at, id);
CREATE INDEX events_tenant_category_occurred ON events (tenant, category, occurred_at, id);

-- One row per AI request: the record of what was written, and what keeps
-- request ids unique per tenant. /usage reads usage_rollups instead.
CREATE TABLE usage_records (
	tenant          TEXT COLLATE "C" NOT NULL,
	id              TEXT COLLATE "C" NOT NULL,
	at              BIGINT NOT NULL,
	conversation_id TEXT COLLATE "C" NOT NULL DEFAULT '',
	user_id         TEXT COLLATE "C" NOT NULL DEFAULT '',
	department      TEXT COLLATE "C" NOT NULL DEFAULT '',
	model           TEXT COLLATE "C" NOT NULL DEFAULT '',
	assistant_id    TEXT COLLATE "C" NOT NULL DEFAULT '',
	input_tokens    BIGINT NOT NULL DEFAULT 0,
	output_tokens   BIGINT NOT NULL DEFAULT 0,
	cost            DOUBLE PRECISION NOT NULL DEFAULT 0,
	PRIMARY KEY (tenant, id)
);

-- usage_records summed per bucket (width 3600000: hour, 86400000: day, in
-- milliseconds) and per combination of the dimensions and the conversation,
-- written in the same transaction as each usage_records row. /usage
-- aggregates these cells instead of the requests. Keeping conversation_id
-- and user_id in the key keeps the distinct counts exact.
CREATE TABLE usage_rollups (
	tenant          TEXT COLLATE "C" NOT NULL,
	width           BIGINT NOT NULL,
	bucket          BIGINT NOT NULL,
	model           TEXT COLLATE "C" NOT NULL,
	department      TEXT COLLATE "C" NOT NULL,
	assistant_id    TEXT COLLATE "C" NOT NULL,
	user_id         TEXT COLLATE "C" NOT NULL,
	conversation_id TEXT COLLATE "C" NOT NULL,
	requests        BIGINT NOT NULL,
	input_tokens    BIGINT NOT NULL,
	output_tokens   BIGINT NOT NULL,
	cost            DOUBLE PRECISION NOT NULL,
	PRIMARY KEY (tenant, width, bucket, model, department, assistant_id, user_id, conversation_id)
);

-- The revision of each tenant's conversations, assistants and events: a
-- random number set anew by every write to them, in the write's
-- transaction. A cached page is served again only while it is unchanged.
CREATE TABLE provider_revisions (
	tenant   TEXT COLLATE "C" NOT NULL,
	resource TEXT NOT NULL,
	rev      BIGINT NOT NULL,
	PRIMARY KEY (tenant, resource)
);

CREATE TABLE provider_settings (
	name  TEXT NOT NULL PRIMARY KEY,
	value TEXT NOT NULL
);
