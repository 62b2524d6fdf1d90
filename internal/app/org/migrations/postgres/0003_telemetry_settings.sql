-- The telemetry settings of each organisation; an organisation without a row
-- has the defaults. store_prompts: whether prompt text that tools send is
-- stored as conversations of the Ingestion key's source (false, the
-- default: it is dropped).
CREATE TABLE orgapi_telemetry_settings (
    org_id        TEXT COLLATE "C" PRIMARY KEY REFERENCES orgapi_organisations (id) ON DELETE CASCADE,
    store_prompts BOOLEAN NOT NULL DEFAULT FALSE,
    updated_at    BIGINT  NOT NULL
);
