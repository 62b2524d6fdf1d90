-- Usage buckets have no updatedAt: the version of a pushed bucket is the
-- asOf of its delivery (when the pusher read it). A delivery older than the
-- version stored, or than the last reconciliation walk of the source's usage,
-- is not written, so a late delivery cannot overwrite a newer count.
CREATE TABLE sources_push_usage_versions (
    source_id  TEXT NOT NULL,
    bucket_key TEXT NOT NULL,
    start_ms   BIGINT NOT NULL,
    as_of_ms   BIGINT NOT NULL,
    PRIMARY KEY (source_id, bucket_key)
);
CREATE INDEX sources_push_usage_versions_start ON sources_push_usage_versions (start_ms);

-- The start of the last successful reconciliation walk of each push
-- source's usage: what it stored is newer than any delivery read before.
CREATE TABLE sources_push_reconciled (
    source_id  TEXT PRIMARY KEY,
    started_ms BIGINT NOT NULL
);
