-- The push transport: a source of transport 'push' receives records at
-- POST /push/{sourceId}, signed with push_secret (NULL for other
-- transports). Its url and token, when not empty, are the REST address of
-- the reconciliation walk. SQLite cannot change a CHECK constraint, so the
-- table is rebuilt.
CREATE TABLE sources_new (
    id                   TEXT    PRIMARY KEY,
    org_id               TEXT    NOT NULL,
    name                 TEXT    NOT NULL,
    url                  TEXT    NOT NULL,
    token                TEXT    NOT NULL,
    transport            TEXT    NOT NULL CHECK (transport IN ('rest', 'mcp', 'push')),
    every_ms             INTEGER NOT NULL CHECK (every_ms > 0),
    created_at_ms        INTEGER NOT NULL,
    next_due_ms          INTEGER NOT NULL,
    last_sync_started_ms INTEGER,
    push_secret          TEXT,
    UNIQUE (org_id, name)
);
INSERT INTO sources_new (id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms, last_sync_started_ms)
    SELECT id, org_id, name, url, token, transport, every_ms, created_at_ms, next_due_ms, last_sync_started_ms FROM sources;
DROP TABLE sources;
ALTER TABLE sources_new RENAME TO sources;
CREATE INDEX sources_org ON sources (org_id, created_at_ms, id);
CREATE INDEX sources_due ON sources (next_due_ms);

-- The webhook-ids of the pushes accepted, kept until expires_at_ms (past
-- the timestamp tolerance), so a replayed or retried delivery is not written
-- twice.
CREATE TABLE sources_push_messages (
    source_id     TEXT    NOT NULL,
    msg_id        TEXT    NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    PRIMARY KEY (source_id, msg_id)
);
CREATE INDEX sources_push_messages_expiry ON sources_push_messages (expires_at_ms);
