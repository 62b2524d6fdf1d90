-- The review-task API: tasks, webhooks, the events sent to them and their
-- deliveries, per-key request counts. Times are Unix milliseconds (UTC).
CREATE TABLE reviewapi_tasks (
    id              TEXT COLLATE "C" PRIMARY KEY,
    org_id          TEXT COLLATE "C" NOT NULL,
    agent_id        TEXT COLLATE "C" NOT NULL,
    status          TEXT NOT NULL,
    -- the task as served (canonical JSON)
    body            TEXT NOT NULL,
    review_deadline BIGINT,
    evaluations     BIGINT NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX reviewapi_tasks_list ON reviewapi_tasks (org_id, created_at DESC, id);
CREATE INDEX reviewapi_tasks_status ON reviewapi_tasks (org_id, status, created_at DESC, id);
CREATE INDEX reviewapi_tasks_open ON reviewapi_tasks (status, updated_at);

CREATE TABLE reviewapi_webhooks (
    id          TEXT COLLATE "C" PRIMARY KEY,
    org_id      TEXT COLLATE "C" NOT NULL,
    url         TEXT NOT NULL,
    events      TEXT NOT NULL,
    description TEXT NOT NULL,
    secret      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    deleted_at  BIGINT
);
CREATE INDEX reviewapi_webhooks_org ON reviewapi_webhooks (org_id, created_at, id);

CREATE TABLE reviewapi_events (
    id         TEXT COLLATE "C" PRIMARY KEY,
    org_id     TEXT COLLATE "C" NOT NULL,
    task_id    TEXT COLLATE "C" NOT NULL,
    type       TEXT NOT NULL,
    -- the delivery body, the same bytes for every attempt
    body       TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE reviewapi_deliveries (
    event_id     TEXT COLLATE "C" NOT NULL REFERENCES reviewapi_events (id),
    webhook_id   TEXT COLLATE "C" NOT NULL REFERENCES reviewapi_webhooks (id),
    -- pending, delivered, failed (gave up or refused), cancelled (webhook deleted)
    state        TEXT NOT NULL,
    attempts     BIGINT NOT NULL DEFAULT 0,
    last_status  BIGINT NOT NULL DEFAULT 0,
    last_error   TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    delivered_at BIGINT,
    PRIMARY KEY (event_id, webhook_id)
);
CREATE INDEX reviewapi_deliveries_pending ON reviewapi_deliveries (state, updated_at);

CREATE TABLE reviewapi_rate_counts (
    key_id       TEXT COLLATE "C" NOT NULL,
    window_start BIGINT NOT NULL,
    count        BIGINT NOT NULL,
    PRIMARY KEY (key_id, window_start)
);

CREATE TABLE reviewapi_settings (
    org_id            TEXT COLLATE "C" PRIMARY KEY,
    review_timeout_ms BIGINT NOT NULL
);
