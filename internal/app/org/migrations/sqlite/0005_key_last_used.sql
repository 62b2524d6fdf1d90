-- When each API key was last used, and through which API: last_used_at in
-- Unix milliseconds (NULL: never), last_used_api one of org, review, mcp or
-- telemetry. Written at most once a minute per key (Store.noteUse).
ALTER TABLE orgapi_api_keys ADD COLUMN last_used_at INTEGER;
ALTER TABLE orgapi_api_keys ADD COLUMN last_used_api TEXT;
