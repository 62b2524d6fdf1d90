-- The organisation API: organisations, agents, API keys, instructions and the
-- audit trail. Times are Unix milliseconds (UTC).
CREATE TABLE orgapi_organisations (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    plan         TEXT NOT NULL,
    hourly_limit INTEGER NOT NULL DEFAULT 0,
    -- the last sequence number of the organisation's audit trail
    audit_seq    INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL
);

CREATE TABLE orgapi_agents (
    id                TEXT PRIMARY KEY,
    org_id            TEXT NOT NULL REFERENCES orgapi_organisations (id),
    name              TEXT NOT NULL,
    type              TEXT NOT NULL,
    -- the number of instructions assigned; the guard of the 100 limit
    instruction_count INTEGER NOT NULL DEFAULT 0 CHECK (instruction_count BETWEEN 0 AND 100),
    created_at        INTEGER NOT NULL
);
CREATE INDEX orgapi_agents_org ON orgapi_agents (org_id, created_at, id);

CREATE TABLE orgapi_api_keys (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES orgapi_organisations (id),
    name        TEXT NOT NULL,
    type        TEXT NOT NULL,
    secret_hash BLOB NOT NULL UNIQUE,
    last4       TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER,
    revoked_at  INTEGER
);
CREATE INDEX orgapi_api_keys_org ON orgapi_api_keys (org_id, created_at, id);

CREATE TABLE orgapi_instructions (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES orgapi_organisations (id),
    agent_type    TEXT NOT NULL,
    trigger_type  TEXT NOT NULL,
    action        TEXT NOT NULL,
    assessment_id TEXT,
    -- case-folded title and trigger text, pattern and values, for search
    search_text   TEXT NOT NULL,
    -- the instruction as served (canonical JSON)
    body          TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    UNIQUE (org_id, assessment_id)
);
-- Lists read this index only: it holds every filtered column, so a search
-- scans the index and reads the row (the body) only for the page it answers.
-- (SQLite keeps long index entries in overflow pages; PostgreSQL's index
-- leaves the search text out.)
CREATE INDEX orgapi_instructions_list ON orgapi_instructions
    (org_id, created_at DESC, id, trigger_type, action, agent_type, search_text);

CREATE TABLE orgapi_instruction_agents (
    agent_id       TEXT NOT NULL REFERENCES orgapi_agents (id),
    instruction_id TEXT NOT NULL REFERENCES orgapi_instructions (id) ON DELETE CASCADE,
    PRIMARY KEY (agent_id, instruction_id)
);
CREATE INDEX orgapi_instruction_agents_instruction ON orgapi_instruction_agents (instruction_id);

CREATE TABLE orgapi_audit (
    org_id        TEXT NOT NULL,
    -- numbered per organisation in commit order (orgapi_organisations.audit_seq)
    seq           INTEGER NOT NULL,
    at            INTEGER NOT NULL,
    actor_type    TEXT NOT NULL,
    actor_id      TEXT NOT NULL,
    actor_name    TEXT NOT NULL,
    action        TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id   TEXT NOT NULL,
    before_json   TEXT,
    after_json    TEXT,
    PRIMARY KEY (org_id, seq)
);
