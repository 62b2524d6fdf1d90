-- What the merged view of several sources and the dashboards read
-- (Merged, UsageSeries, SearchConversations).

-- Usage buckets: whether the bucket carried a cost, so that a sum can tell
-- a cost of 0 from none reported.
ALTER TABLE consumer_records ADD COLUMN has_cost BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE consumer_records SET has_cost = TRUE
WHERE resource = 'usage' AND strpos(body, '\u0000') = 0 AND json_typeof(body::json #> '{metrics,cost}') = 'number';

-- Conversations: user.id and assistant.id in the columns user_id and
-- assistant_id (a usage bucket's dimensions otherwise), when they are
-- strings of at most 256 bytes, as the writer keeps them from now on. A
-- body with a \u0000 escape anywhere (which PostgreSQL cannot unescape into
-- text) is left for its next version.
UPDATE consumer_records SET
	user_id = CASE WHEN json_typeof(body::json #> '{user,id}') = 'string'
		AND octet_length(body::json #>> '{user,id}') <= 256
		THEN body::json #>> '{user,id}' ELSE '' END,
	assistant_id = CASE WHEN json_typeof(body::json #> '{assistant,id}') = 'string'
		AND octet_length(body::json #>> '{assistant,id}') <= 256
		THEN body::json #>> '{assistant,id}' ELSE '' END
WHERE resource = 'conversations' AND strpos(body, '\u0000') = 0;

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
