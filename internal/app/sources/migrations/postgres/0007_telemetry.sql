-- The telemetry transport: a source of transport 'telemetry' is an Ingestion
-- key of its organisation, created by the telemetry endpoint on the key's
-- first accepted request. It has no url: nothing walks it, the tools send.
ALTER TABLE sources DROP CONSTRAINT sources_transport_check;
ALTER TABLE sources ADD CONSTRAINT sources_transport_check CHECK (transport IN ('rest', 'mcp', 'push', 'export', 'telemetry'));
