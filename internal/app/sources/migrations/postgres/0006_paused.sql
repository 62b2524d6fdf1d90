-- A source whose sync failed for a reason that repeating it cannot mend (an
-- export past the reader's bounds, a directory the service may not read) is
-- paused: the scheduler skips it until an Administrator resumes it or edits
-- its URL. paused_at_ms is when it was paused (NULL: not paused),
-- paused_reason what the organisation is shown.
ALTER TABLE sources ADD COLUMN paused_at_ms BIGINT;
ALTER TABLE sources ADD COLUMN paused_reason TEXT;
