-- Single sign-on through each organisation's OpenID Connect provider: its
-- settings, the email domains it covers, the sign-ins started and not yet
-- completed, and the sessions it started. Times are Unix milliseconds (UTC).
CREATE TABLE sso_settings (
    org_id         TEXT COLLATE "C" PRIMARY KEY,
    issuer         TEXT NOT NULL,
    client_id      TEXT NOT NULL,
    -- sealed with the service's keyring, bound to this column and row
    client_secret  TEXT NOT NULL,
    -- the id of the key that sealed client_secret; NULL: corrupt
    secret_key_id  TEXT,
    -- JSON arrays of strings
    scopes         TEXT NOT NULL,
    role_claim     TEXT NOT NULL,
    admin_values   TEXT NOT NULL,
    reviewer_values TEXT NOT NULL,
    -- 'refuse' or 'Reviewer'
    unmapped       TEXT NOT NULL,
    -- 1: passwords no longer sign the organisation's people in
    required       BIGINT NOT NULL DEFAULT 0,
    -- 1 for the first settings, +1 at every change of them
    version        BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);

-- The email domains each organisation's provider covers: one organisation
-- per domain in the whole service.
CREATE TABLE sso_domains (
    domain TEXT COLLATE "C" PRIMARY KEY,
    org_id TEXT COLLATE "C" NOT NULL REFERENCES sso_settings (org_id) ON DELETE CASCADE
);
CREATE INDEX sso_domains_org ON sso_domains (org_id);

-- Sign-ins started and not yet completed: each row is used once, by the
-- callback that presents its state (in any process).
CREATE TABLE sso_states (
    -- the SHA-256 digest of the state sent to the provider
    state_hash   BYTEA PRIMARY KEY,
    org_id       TEXT COLLATE "C" NOT NULL REFERENCES sso_settings (org_id) ON DELETE CASCADE,
    -- the settings' version the sign-in started under
    version      BIGINT NOT NULL,
    nonce        TEXT NOT NULL,
    -- the PKCE code verifier
    verifier     TEXT NOT NULL,
    email        TEXT NOT NULL,
    next_path    TEXT NOT NULL,
    redirect_url TEXT NOT NULL,
    expires_at   BIGINT NOT NULL
);
CREATE INDEX sso_states_expires ON sso_states (expires_at);

-- The people sessions started through single sign-on: the provider is asked
-- again about them every so often (refresh token grant).
CREATE TABLE sso_sessions (
    id            TEXT COLLATE "C" PRIMARY KEY,
    -- the people session's token digest; the row goes with the session
    token_hash    BYTEA NOT NULL UNIQUE REFERENCES people_sessions (token_hash) ON DELETE CASCADE,
    org_id        TEXT COLLATE "C" NOT NULL REFERENCES sso_settings (org_id) ON DELETE CASCADE,
    user_id       TEXT NOT NULL,
    version       BIGINT NOT NULL,
    issuer        TEXT NOT NULL,
    subject       TEXT NOT NULL,
    -- sealed like client_secret; NULL when the provider gave none
    refresh_token TEXT,
    secret_key_id TEXT,
    checked_at    BIGINT NOT NULL
);
CREATE INDEX sso_sessions_org ON sso_sessions (org_id);
