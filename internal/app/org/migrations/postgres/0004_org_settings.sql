-- The general settings of each organisation; an organisation without a row
-- has the defaults. time_zone: the IANA name of the zone the dashboard shows
-- times in ('UTC', the default).
CREATE TABLE orgapi_org_settings (
    org_id     TEXT COLLATE "C" PRIMARY KEY REFERENCES orgapi_organisations (id) ON DELETE CASCADE,
    time_zone  TEXT   NOT NULL DEFAULT 'UTC',
    updated_at BIGINT NOT NULL
);
