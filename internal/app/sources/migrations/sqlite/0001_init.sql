-- The sources of the oversight service: providers whose data the service
-- collects for an organisation. Times are milliseconds since the Unix epoch.
CREATE TABLE sources (
    id                   TEXT    PRIMARY KEY,
    org_id               TEXT    NOT NULL,
    name                 TEXT    NOT NULL,
    url                  TEXT    NOT NULL,
    token                TEXT    NOT NULL,
    transport            TEXT    NOT NULL CHECK (transport IN ('rest', 'mcp')),
    every_ms             INTEGER NOT NULL CHECK (every_ms > 0),
    created_at_ms        INTEGER NOT NULL,
    next_due_ms          INTEGER NOT NULL,
    last_sync_started_ms INTEGER,
    UNIQUE (org_id, name)
);
CREATE INDEX sources_org ON sources (org_id, created_at_ms, id);
CREATE INDEX sources_due ON sources (next_due_ms);

-- Settings of the component, such as the key that seals the collected view's cursors.
CREATE TABLE sources_settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
