-- When a telemetry source last received an accepted request: set by the
-- telemetry endpoint once a request (not once a record), NULL before the
-- first and for the other transports.
ALTER TABLE sources ADD COLUMN last_received_ms BIGINT;
