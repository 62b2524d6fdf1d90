-- The pusher's watermarks: per target (tenant and receiver) and resource,
-- the key of the last record queued for delivery.
CREATE TABLE aiusage_push_watermarks (
    target   TEXT NOT NULL,
    resource TEXT NOT NULL,
    at_ms    BIGINT NOT NULL,
    id       TEXT NOT NULL,
    PRIMARY KEY (target, resource)
);
