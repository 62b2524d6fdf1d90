-- The telemetry settings of each organisation; an organisation without a row
-- has the defaults. store_prompts: whether prompt text that tools send is
-- stored as conversations of the Ingestion key's source (0, the default:
-- it is dropped).
CREATE TABLE orgapi_telemetry_settings (
    org_id        TEXT    PRIMARY KEY REFERENCES orgapi_organisations (id) ON DELETE CASCADE,
    store_prompts INTEGER NOT NULL DEFAULT 0 CHECK (store_prompts IN (0, 1)),
    updated_at    INTEGER NOT NULL
);
