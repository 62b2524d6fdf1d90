-- The export transport: a source of transport 'export' reads the provider's
-- scheduled export (docs/export.md) from url, an https or loopback http base
-- address or a directory.
ALTER TABLE sources DROP CONSTRAINT sources_transport_check;
ALTER TABLE sources ADD CONSTRAINT sources_transport_check CHECK (transport IN ('rest', 'mcp', 'push', 'export'));
