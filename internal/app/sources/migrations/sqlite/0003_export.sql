-- The export transport: a source of transport 'export' reads the provider's
-- scheduled export (docs/export.md) from url, an https or loopback http base
-- address or a directory. SQLite cannot change a CHECK constraint, so the
-- table is rebuilt, with the push_secret of migration 0002.
CREATE TABLE sources_new (
    id                   TEXT    PRIMARY KEY,
    org_id               TEXT    NOT NULL,
    name                 TEXT    NOT NULL,
    url                  TEXT    NOT NULL,
    token                TEXT    NOT NULL,
    transport            TEXT    NOT NULL CHECK (transport IN ('rest', 'mcp', 'push', 'export')),
    every_ms             INTEGER NOT NULL CHECK (every_ms > 0),
    created_at_ms        INTEGER NOT NULL,
    next_due_ms          INTEGER NOT NULL,
    last_sync_started_ms INTEGER,
    push_secret          TEXT,
    UNIQUE (org_id, name)
);
INSERT INTO sources_new (id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms, last_sync_started_ms, push_secret)
    SELECT id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms, last_sync_started_ms, push_secret FROM sources;
DROP TABLE sources;
ALTER TABLE sources_new RENAME TO sources;
CREATE INDEX sources_org ON sources (org_id, created_at_ms, id);
CREATE INDEX sources_due ON sources (next_due_ms);
