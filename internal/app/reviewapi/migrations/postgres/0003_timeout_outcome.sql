-- What the review timeout does to a task no person decided in time:
-- 'reject' (the default) or 'approve'. A review_timeout_ms of 0 now means
-- the service's default timeout, so a row may set the outcome alone.
ALTER TABLE reviewapi_settings ADD COLUMN timeout_outcome TEXT NOT NULL DEFAULT 'reject';
