-- One-time passwords (an invitation or a reset by an Administrator): the
-- user must change it at the first sign-in, and it expires at
-- one_time_until (Unix milliseconds); NULL for a password the user chose.
ALTER TABLE people_users ADD COLUMN one_time_until BIGINT;

-- The browsers that have signed in to an account: each holds a device
-- cookie whose failed sign-ins are counted apart from everyone else's, so
-- that failures from elsewhere never keep the owner out.
CREATE TABLE people_devices (
    -- the SHA-256 digest of the token the browser holds
    token_hash   BYTEA PRIMARY KEY,
    user_id      TEXT COLLATE "C" NOT NULL REFERENCES people_users (id) ON DELETE CASCADE,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT NOT NULL
);
CREATE INDEX people_devices_user ON people_devices (user_id, last_used_at);
