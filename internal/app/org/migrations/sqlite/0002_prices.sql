-- The price table of each organisation: per model (the exact model string
-- the tools report), prices in the organisation's currency per million
-- tokens of each kind; NULL where none is given. Empty by default.
CREATE TABLE orgapi_prices (
    org_id       TEXT NOT NULL REFERENCES orgapi_organisations (id) ON DELETE CASCADE,
    model        TEXT NOT NULL,
    input        REAL,
    cache_read   REAL,
    cache_write  REAL,
    output       REAL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (org_id, model)
);
