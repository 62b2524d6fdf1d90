-- The telemetry an Ingestion key sent, before it becomes usage buckets of its
-- source (source_id is the telemetry source of the key, see package sources).
--
-- telemetry_usage holds one row per API request (an event or a span) and per
-- counted metric point, under the record's idempotency key: a re-sent record
-- finds its key and changes nothing. A cumulative point is stored as the
-- delta it adds (see telemetry_series). Times are Unix milliseconds; hour_ms
-- is time_ms floored to the UTC hour. cost_estimate is the tool's own
-- estimate, NULL when it sends none.
CREATE TABLE telemetry_usage (
    source_id     TEXT    NOT NULL,
    key           TEXT    NOT NULL,
    time_ms       BIGINT  NOT NULL,
    hour_ms       BIGINT  NOT NULL,
    tool          TEXT    NOT NULL,
    tool_version  TEXT    NOT NULL,
    model         TEXT    NOT NULL,
    email         TEXT    NOT NULL,
    device        TEXT    NOT NULL,
    session_id    TEXT    NOT NULL,
    department    TEXT    NOT NULL,
    origin        TEXT    NOT NULL,
    input         BIGINT  NOT NULL,
    cache_read    BIGINT  NOT NULL,
    cache_write   BIGINT  NOT NULL,
    output        BIGINT  NOT NULL,
    cost_estimate DOUBLE PRECISION,
    requests      BIGINT  NOT NULL,
    PRIMARY KEY (source_id, key)
);
CREATE INDEX telemetry_usage_hour ON telemetry_usage (source_id, hour_ms);
-- The one-source rule (events over spans over metrics) holds per tool and
-- session across hours: a session's metrics exported after the hour of its
-- last request are not counted again.
CREATE INDEX telemetry_usage_session ON telemetry_usage (source_id, tool, session_id);

-- The last point counted of each run of a cumulative metric series: a run
-- is a series (resource, scope, metric and attributes) from one start time.
-- Times are Unix nanoseconds, as OTLP sends them, so that two points of one
-- millisecond stay apart.
CREATE TABLE telemetry_series (
    source_id   TEXT    NOT NULL,
    series      TEXT    NOT NULL,
    start_ns    BIGINT  NOT NULL,
    time_ns     BIGINT  NOT NULL,
    input       BIGINT  NOT NULL,
    cache_read  BIGINT  NOT NULL,
    cache_write BIGINT  NOT NULL,
    output      BIGINT  NOT NULL,
    cost        DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (source_id, series, start_ns)
);

-- The hours of a source whose usage buckets are to be computed again: mark
-- grows with every change, so a rollup forgets an hour only when nothing
-- changed it while it was computed.
CREATE TABLE telemetry_dirty (
    source_id TEXT    NOT NULL,
    hour_ms   BIGINT  NOT NULL,
    mark      BIGINT  NOT NULL,
    PRIMARY KEY (source_id, hour_ms)
);

-- The dimension sets of the usage buckets last written for an hour (a JSON
-- array), so that a set that no longer has usage is written as a zero
-- bucket.
CREATE TABLE telemetry_hours (
    source_id  TEXT    NOT NULL,
    hour_ms    BIGINT  NOT NULL,
    dimensions TEXT    NOT NULL,
    PRIMARY KEY (source_id, hour_ms)
);

-- The first time each tool (service.name) of a source was seen, the
-- createdAt of its assistant record, which every later batch repeats.
CREATE TABLE telemetry_assistants (
    source_id     TEXT    NOT NULL,
    assistant_id  TEXT    NOT NULL,
    first_seen_ms BIGINT  NOT NULL,
    PRIMARY KEY (source_id, assistant_id)
);
