-- The throttle of failed sign-ins counts failures per account, client
-- address, pair of both, or trusted device, with growing delays instead of
-- fixed windows: past a number of free failures, each further attempt waits
-- twice as long after the last failure, up to a cap. A count is forgotten
-- once its last failure is old enough. Shared by every process on the
-- database.
DROP TABLE people_signin_failures;

CREATE TABLE people_signin_counts (
    -- 'account', 'address', 'pair', 'device' or 'change' (see throttle.go)
    kind    TEXT NOT NULL,
    subject TEXT COLLATE "C" NOT NULL,
    -- failures (and attempts being checked) since the count was last forgotten
    count   BIGINT NOT NULL,
    -- when the last one was counted (Unix milliseconds)
    last_at BIGINT NOT NULL,
    -- the last_at before it, or 0: the delay runs from it while the newest
    -- attempt is checked
    prev_at BIGINT NOT NULL,
    PRIMARY KEY (kind, subject)
);
CREATE INDEX people_signin_counts_last ON people_signin_counts (last_at);
