-- The vendors' usage transports: a source of transport 'openai' or
-- 'anthropic' reads an organisation's usage and costs from the vendor's
-- administration API, with its Admin key as the (encrypted) token.
-- SQLite cannot change a CHECK constraint, so the table is rebuilt, with the
-- columns of migrations 0002, 0005, 0006 and 0008.
CREATE TABLE sources_new (
    id                   TEXT    PRIMARY KEY,
    org_id               TEXT    NOT NULL,
    name                 TEXT    NOT NULL,
    url                  TEXT    NOT NULL,
    token                TEXT    NOT NULL,
    transport            TEXT    NOT NULL CHECK (transport IN ('rest', 'mcp', 'push', 'export', 'telemetry', 'openai', 'anthropic')),
    every_ms             INTEGER NOT NULL CHECK (every_ms > 0),
    created_at_ms        INTEGER NOT NULL,
    next_due_ms          INTEGER NOT NULL,
    last_sync_started_ms INTEGER,
    push_secret          TEXT,
    secret_key_id        TEXT,
    paused_at_ms         INTEGER,
    paused_reason        TEXT,
    last_received_ms     INTEGER,
    UNIQUE (org_id, name)
);
INSERT INTO sources_new (id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms, last_sync_started_ms,
        push_secret, secret_key_id, paused_at_ms, paused_reason, last_received_ms)
    SELECT id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms, last_sync_started_ms,
        push_secret, secret_key_id, paused_at_ms, paused_reason, last_received_ms FROM sources;
DROP TABLE sources;
ALTER TABLE sources_new RENAME TO sources;
CREATE INDEX sources_org ON sources (org_id, created_at_ms, id);
CREATE INDEX sources_due ON sources (next_due_ms);
