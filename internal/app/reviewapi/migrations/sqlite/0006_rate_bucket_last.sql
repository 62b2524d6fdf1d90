-- Each one-minute bucket of the rate limit keeps when its last request was
-- admitted (Unix milliseconds): the bucket is counted until that request is
-- an hour old, not until the whole minute is, so a refusal's Retry-After is
-- never longer than the hour and exact to the second. A bucket written
-- before this column is taken as full to its minute's end.
ALTER TABLE reviewapi_rate_buckets ADD COLUMN last_at BIGINT NOT NULL DEFAULT 0;
UPDATE reviewapi_rate_buckets SET last_at = bucket_start + 59999;
