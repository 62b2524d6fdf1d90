-- The tables of Open WebUI v0.9.0 that the example reads, written by hand from
-- the column list of its published schema documentation (Open WebUI creates
-- them with Python migrations; it ships no SQL). Types are what SQLAlchemy
-- renders: BIGINT for epoch timestamps, BOOLEAN, JSON for JSON columns (text
-- holding JSON on SQLite, json on PostgreSQL). The same text runs on both.

CREATE TABLE "user" (
    id                VARCHAR(255) PRIMARY KEY,
    username          VARCHAR(50),
    name              VARCHAR(255) NOT NULL,
    email             VARCHAR(255) NOT NULL,
    role              VARCHAR(255) NOT NULL,
    profile_image_url TEXT,
    bio               TEXT,
    gender            TEXT,
    date_of_birth     DATE,
    last_active_at    BIGINT,
    updated_at        BIGINT,
    created_at        BIGINT,
    api_key           VARCHAR(255) UNIQUE,
    settings          JSON,
    info              JSON,
    oauth_sub         TEXT UNIQUE,
    scim              JSON
);

CREATE TABLE auth (
    id       VARCHAR(255) PRIMARY KEY,
    email    VARCHAR(255),
    password TEXT,
    active   BOOLEAN
);

CREATE TABLE "group" (
    id          TEXT PRIMARY KEY,
    user_id     TEXT,
    name        TEXT,
    description TEXT,
    data        JSON,
    meta        JSON,
    permissions JSON,
    created_at  BIGINT,
    updated_at  BIGINT
);

CREATE TABLE group_member (
    id         TEXT PRIMARY KEY,
    group_id   TEXT NOT NULL REFERENCES "group" (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES "user" (id) ON DELETE CASCADE,
    created_at BIGINT,
    updated_at BIGINT,
    UNIQUE (group_id, user_id)
);

CREATE TABLE chat (
    id           VARCHAR(255) PRIMARY KEY,
    user_id      VARCHAR(255),
    title        TEXT,
    chat         JSON,
    created_at   BIGINT,
    updated_at   BIGINT,
    share_id     TEXT UNIQUE,
    archived     BOOLEAN DEFAULT false,
    pinned       BOOLEAN DEFAULT false,
    meta         JSON DEFAULT '{}' NOT NULL,
    folder_id    TEXT,
    tasks        JSON,
    summary      TEXT,
    last_read_at BIGINT
);
CREATE INDEX user_id_archived_idx ON chat (user_id, archived);
CREATE INDEX updated_at_user_id_idx ON chat (updated_at, user_id);

CREATE TABLE file (
    id         TEXT PRIMARY KEY,
    user_id    TEXT,
    hash       TEXT,
    filename   TEXT,
    path       TEXT,
    data       JSON,
    meta       JSON,
    created_at BIGINT,
    updated_at BIGINT
);

CREATE TABLE chat_file (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    chat_id    TEXT NOT NULL REFERENCES chat (id) ON DELETE CASCADE,
    file_id    TEXT NOT NULL REFERENCES file (id) ON DELETE CASCADE,
    message_id TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (chat_id, file_id)
);

CREATE TABLE model (
    id            TEXT PRIMARY KEY,
    user_id       TEXT,
    base_model_id TEXT,
    name          TEXT,
    params        JSON,
    meta          JSON,
    is_active     BOOLEAN DEFAULT true NOT NULL,
    created_at    BIGINT,
    updated_at    BIGINT
);

CREATE TABLE access_grant (
    id             TEXT PRIMARY KEY,
    resource_type  TEXT NOT NULL,
    resource_id    TEXT NOT NULL,
    principal_type TEXT NOT NULL,
    principal_id   TEXT NOT NULL,
    permission     TEXT NOT NULL
);

CREATE TABLE knowledge (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    name        TEXT NOT NULL,
    description TEXT,
    data        JSON,
    meta        JSON,
    created_at  BIGINT,
    updated_at  BIGINT
);

CREATE TABLE knowledge_file (
    id           TEXT PRIMARY KEY,
    knowledge_id TEXT NOT NULL REFERENCES knowledge (id) ON DELETE CASCADE,
    file_id      TEXT NOT NULL REFERENCES file (id) ON DELETE CASCADE,
    user_id      TEXT,
    created_at   BIGINT,
    updated_at   BIGINT
);

CREATE TABLE tool (
    id         TEXT PRIMARY KEY,
    user_id    TEXT,
    name       TEXT,
    content    TEXT,
    specs      JSON,
    meta       JSON,
    valves     JSON,
    created_at BIGINT,
    updated_at BIGINT
);

CREATE TABLE feedback (
    id         TEXT PRIMARY KEY,
    user_id    TEXT,
    version    BIGINT DEFAULT 0,
    type       TEXT,
    data       JSON,
    meta       JSON,
    snapshot   JSON,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
