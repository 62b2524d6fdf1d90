-- "Check this source": the conformance suite run against a REST or MCP
-- source in the background, at an Administrator's request. A run is queued,
-- then running, then done (report holds the HTML report, the counts its
-- results) or failed (error says why the suite could not run). Only the
-- latest runs of each source are kept.
CREATE TABLE source_conformance_runs (
    id              TEXT    PRIMARY KEY,
    source_id       TEXT    NOT NULL,
    org_id          TEXT    NOT NULL,
    requested_by    TEXT    NOT NULL,
    requested_at_ms INTEGER NOT NULL,
    started_at_ms   INTEGER,
    finished_at_ms  INTEGER,
    state           TEXT    NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
    passed          INTEGER NOT NULL DEFAULT 0,
    failed          INTEGER NOT NULL DEFAULT 0,
    warned          INTEGER NOT NULL DEFAULT 0,
    skipped         INTEGER NOT NULL DEFAULT 0,
    errored         INTEGER NOT NULL DEFAULT 0,
    error           TEXT    NOT NULL DEFAULT '',
    report          TEXT
);
CREATE INDEX source_conformance_runs_source ON source_conformance_runs (source_id, requested_at_ms, id);
CREATE INDEX source_conformance_runs_org ON source_conformance_runs (org_id, requested_at_ms);
