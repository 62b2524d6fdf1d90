-- The telemetry transport: a source of transport 'telemetry' is an Ingestion
-- key of its organisation, created by the telemetry endpoint on the key's
-- first accepted request. It has no url: nothing walks it, the tools send.
-- SQLite cannot change a CHECK constraint, so the table is rebuilt, with the
-- columns of migrations 0002, 0005 and 0006.
CREATE TABLE sources_new (
    id                   TEXT    PRIMARY KEY,
    org_id               TEXT    NOT NULL,
    name                 TEXT    NOT NULL,
    url                  TEXT    NOT NULL,
    token                TEXT    NOT NULL,
    transport            TEXT    NOT NULL CHECK (transport IN ('rest', 'mcp', 'push', 'export', 'telemetry')),
    every_ms             INTEGER NOT NULL CHECK (every_ms > 0),
    created_at_ms        INTEGER NOT NULL,
    next_due_ms          INTEGER NOT NULL,
    last_sync_started_ms INTEGER,
    push_secret          TEXT,
    secret_key_id        TEXT,
    paused_at_ms         INTEGER,
    paused_reason        TEXT,
    UNIQUE (org_id, name)
);
INSERT INTO sources_new (id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms, last_sync_started_ms,
        push_secret, secret_key_id, paused_at_ms, paused_reason)
    SELECT id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms, last_sync_started_ms,
        push_secret, secret_key_id, paused_at_ms, paused_reason FROM sources;
DROP TABLE sources;
ALTER TABLE sources_new RENAME TO sources;
CREATE INDEX sources_org ON sources (org_id, created_at_ms, id);
CREATE INDEX sources_due ON sources (next_due_ms);
