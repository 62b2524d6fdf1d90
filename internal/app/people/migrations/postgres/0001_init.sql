-- The people of an organisation who sign in to the dashboard, their
-- sessions and the count of failed sign-ins. Times are Unix milliseconds
-- (UTC).
CREATE TABLE people_users (
    id            TEXT COLLATE "C" PRIMARY KEY,
    org_id        TEXT COLLATE "C" NOT NULL,
    -- trimmed and lowercased; one user per address in the whole service
    email         TEXT COLLATE "C" NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('Administrator', 'Reviewer')),
    -- argon2id, in the PHC string format
    password_hash TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    disabled_at   BIGINT
);
CREATE INDEX people_users_org ON people_users (org_id, created_at, id);

CREATE TABLE people_sessions (
    -- the SHA-256 digest of the token the client holds
    token_hash   BYTEA PRIMARY KEY,
    user_id      TEXT COLLATE "C" NOT NULL REFERENCES people_users (id) ON DELETE CASCADE,
    created_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    -- the absolute end: created_at plus the absolute timeout
    expires_at   BIGINT NOT NULL
);
CREATE INDEX people_sessions_user ON people_sessions (user_id);

-- Failed sign-ins (and those in progress) per account or client address and
-- window: the throttle, shared by every process on the database.
CREATE TABLE people_signin_failures (
    -- 'account' (subject: the email) or 'address' (subject: the client address)
    kind         TEXT NOT NULL,
    subject      TEXT COLLATE "C" NOT NULL,
    window_start BIGINT NOT NULL,
    count        BIGINT NOT NULL,
    PRIMARY KEY (kind, subject, window_start)
);
CREATE INDEX people_signin_failures_window ON people_signin_failures (window_start);
