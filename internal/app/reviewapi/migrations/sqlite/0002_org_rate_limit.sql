-- Rate limits count requests per organisation (all its keys, all processes)
-- in a sliding hour, kept as one-minute buckets: bucket_start is the Unix
-- millisecond of the minute's start, count the requests admitted in it. The
-- per-key clock-hour counts are dropped.
CREATE TABLE reviewapi_rate_buckets (
    org_id       TEXT NOT NULL,
    bucket_start INTEGER NOT NULL,
    count        INTEGER NOT NULL,
    PRIMARY KEY (org_id, bucket_start)
);
CREATE INDEX reviewapi_rate_buckets_start ON reviewapi_rate_buckets (bucket_start);

DROP TABLE reviewapi_rate_counts;
