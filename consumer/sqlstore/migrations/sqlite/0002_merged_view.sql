-- What the merged view of several sources and the dashboards read
-- (Merged, UsageSeries, SearchConversations).

-- Usage buckets: whether the bucket carried a cost, so that a sum can tell
-- a cost of 0 from none reported.
ALTER TABLE consumer_records ADD COLUMN has_cost INTEGER NOT NULL DEFAULT 0;
UPDATE consumer_records SET has_cost = 1
WHERE resource = 'usage' AND instr(body, '\u0000') = 0 AND json_type(body, '$.metrics.cost') IN ('integer', 'real');

-- Conversations: user.id and assistant.id in the columns user_id and
-- assistant_id (a usage bucket's dimensions otherwise), when they are
-- strings of at most 256 bytes, as the writer keeps them from now on. A
-- body with a \u0000 escape anywhere is left for its next version.
UPDATE consumer_records SET
	user_id = CASE WHEN json_type(body, '$.user.id') = 'text'
		AND length(CAST(json_extract(body, '$.user.id') AS BLOB)) <= 256
		THEN json_extract(body, '$.user.id') ELSE '' END,
	assistant_id = CASE WHEN json_type(body, '$.assistant.id') = 'text'
		AND length(CAST(json_extract(body, '$.assistant.id') AS BLOB)) <= 256
		THEN json_extract(body, '$.assistant.id') ELSE '' END
WHERE resource = 'conversations' AND instr(body, '\u0000') = 0;

-- Conversation search, newest first, in pages by (started_ms, id): by time
-- range, by user or by assistant, each one range of an index per source.
-- Search leaves out tombstones and the conversations marked Missing; the
-- indexes too, which keeps them small and out of the plans of the
-- collected view's pages (in (pos_ms, id) order, whatever the filters).
CREATE INDEX consumer_records_started ON consumer_records (source, started_ms, id)
	WHERE resource = 'conversations' AND deleted = FALSE AND missing_at IS NULL;
CREATE INDEX consumer_records_conv_user ON consumer_records (source, user_id, started_ms, id)
	WHERE resource = 'conversations' AND deleted = FALSE AND missing_at IS NULL;
CREATE INDEX consumer_records_conv_assistant ON consumer_records (source, assistant_id, started_ms, id)
	WHERE resource = 'conversations' AND deleted = FALSE AND missing_at IS NULL;
