-- The organisation API: organisations, agents, API keys, instructions and the
-- audit trail. Times are Unix milliseconds (UTC).
CREATE TABLE orgapi_organisations (
    id           TEXT COLLATE "C" PRIMARY KEY,
    name         TEXT NOT NULL,
    plan         TEXT NOT NULL,
    hourly_limit BIGINT NOT NULL DEFAULT 0,
    -- the last sequence number of the organisation's audit trail
    audit_seq    BIGINT NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL
);

CREATE TABLE orgapi_agents (
    id                TEXT COLLATE "C" PRIMARY KEY,
    org_id            TEXT COLLATE "C" NOT NULL REFERENCES orgapi_organisations (id),
    name              TEXT NOT NULL,
    type              TEXT NOT NULL,
    -- the number of instructions assigned; the guard of the 100 limit
    instruction_count BIGINT NOT NULL DEFAULT 0 CHECK (instruction_count BETWEEN 0 AND 100),
    created_at        BIGINT NOT NULL
);
CREATE INDEX orgapi_agents_org ON orgapi_agents (org_id, created_at, id);

CREATE TABLE orgapi_api_keys (
    id          TEXT COLLATE "C" PRIMARY KEY,
    org_id      TEXT COLLATE "C" NOT NULL REFERENCES orgapi_organisations (id),
    name        TEXT NOT NULL,
    type        TEXT NOT NULL,
    secret_hash BYTEA NOT NULL UNIQUE,
    last4       TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT,
    revoked_at  BIGINT
);
CREATE INDEX orgapi_api_keys_org ON orgapi_api_keys (org_id, created_at, id);

CREATE TABLE orgapi_instructions (
    id            TEXT COLLATE "C" PRIMARY KEY,
    org_id        TEXT COLLATE "C" NOT NULL REFERENCES orgapi_organisations (id),
    agent_type    TEXT NOT NULL,
    trigger_type  TEXT NOT NULL,
    action        TEXT NOT NULL,
    assessment_id TEXT COLLATE "C",
    -- case-folded title and trigger text, pattern and values, for search
    search_text   TEXT NOT NULL,
    -- the instruction as served (canonical JSON)
    body          TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    UNIQUE (org_id, assessment_id)
);
-- Lists read this index in their order. The search text is not in it: a
-- btree entry is limited to about 2.7 kB, and 1,000 values of 200
-- characters make far more.
CREATE INDEX orgapi_instructions_list ON orgapi_instructions
    (org_id, created_at DESC, id, trigger_type, action, agent_type);

CREATE TABLE orgapi_instruction_agents (
    agent_id       TEXT COLLATE "C" NOT NULL REFERENCES orgapi_agents (id),
    instruction_id TEXT COLLATE "C" NOT NULL REFERENCES orgapi_instructions (id) ON DELETE CASCADE,
    PRIMARY KEY (agent_id, instruction_id)
);
CREATE INDEX orgapi_instruction_agents_instruction ON orgapi_instruction_agents (instruction_id);

CREATE TABLE orgapi_audit (
    org_id        TEXT COLLATE "C" NOT NULL,
    -- numbered per organisation in commit order (orgapi_organisations.audit_seq)
    seq           BIGINT NOT NULL,
    at            BIGINT NOT NULL,
    actor_type    TEXT NOT NULL,
    actor_id      TEXT COLLATE "C" NOT NULL,
    actor_name    TEXT NOT NULL,
    action        TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id   TEXT COLLATE "C" NOT NULL,
    before_json   TEXT,
    after_json    TEXT,
    PRIMARY KEY (org_id, seq)
);
