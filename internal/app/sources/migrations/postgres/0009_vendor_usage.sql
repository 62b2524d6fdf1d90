-- The vendors' usage transports: a source of transport 'openai' or
-- 'anthropic' reads an organisation's usage and costs from the vendor's
-- administration API, with its Admin key as the (encrypted) token.
ALTER TABLE sources DROP CONSTRAINT sources_transport_check;
ALTER TABLE sources ADD CONSTRAINT sources_transport_check
    CHECK (transport IN ('rest', 'mcp', 'push', 'export', 'telemetry', 'openai', 'anthropic'));
