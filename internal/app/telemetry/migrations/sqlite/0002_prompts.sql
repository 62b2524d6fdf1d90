-- The prompt text an Ingestion key sent while its organisation allowed
-- storing it (package org, TelemetrySettings.StorePrompts), one row per
-- prompt under the record's idempotency key: a re-sent prompt finds its key
-- and changes nothing. conversation_id is the id of the conversation the
-- prompt belongs to, derived from the source, the tool and the session (or
-- the key, for a prompt without a session), so that every process groups
-- alike. time_ms is the prompt's own time in Unix milliseconds.
CREATE TABLE telemetry_prompts (
    source_id       TEXT    NOT NULL,
    key             TEXT NOT NULL,
    conversation_id TEXT    NOT NULL,
    time_ms         INTEGER NOT NULL,
    tool            TEXT    NOT NULL,
    session_id      TEXT    NOT NULL,
    email           TEXT    NOT NULL,
    device          TEXT    NOT NULL,
    record          TEXT    NOT NULL,
    text            TEXT    NOT NULL,
    PRIMARY KEY (source_id, key)
);
-- A conversation's prompts in time order.
CREATE INDEX telemetry_prompts_conversation ON telemetry_prompts (source_id, conversation_id, time_ms, key);
