-- The push transport: a source of transport 'push' receives records at
-- POST /push/{sourceId}, signed with push_secret (NULL for other
-- transports). Its url and token, when not empty, are the REST address of
-- the reconciliation walk.
ALTER TABLE sources DROP CONSTRAINT sources_transport_check;
ALTER TABLE sources ADD CONSTRAINT sources_transport_check CHECK (transport IN ('rest', 'mcp', 'push'));
ALTER TABLE sources ADD COLUMN push_secret TEXT;

-- The webhook-ids of the pushes accepted, kept until expires_at_ms (past
-- the timestamp tolerance), so a replayed or retried delivery is not written
-- twice.
CREATE TABLE sources_push_messages (
    source_id     TEXT   NOT NULL,
    msg_id        TEXT   NOT NULL,
    expires_at_ms BIGINT NOT NULL,
    PRIMARY KEY (source_id, msg_id)
);
CREATE INDEX sources_push_messages_expiry ON sources_push_messages (expires_at_ms);
