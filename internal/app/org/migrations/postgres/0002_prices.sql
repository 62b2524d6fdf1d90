-- The price table of each organisation: per model (the exact model string
-- the tools report), prices in the organisation's currency per million
-- tokens of each kind; NULL where none is given. Empty by default.
CREATE TABLE orgapi_prices (
    org_id       TEXT COLLATE "C" NOT NULL REFERENCES orgapi_organisations (id) ON DELETE CASCADE,
    model        TEXT COLLATE "C" NOT NULL,
    input        DOUBLE PRECISION,
    cache_read   DOUBLE PRECISION,
    cache_write  DOUBLE PRECISION,
    output       DOUBLE PRECISION,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (org_id, model)
);
