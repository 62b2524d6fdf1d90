package sources

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/aiusage/kit/conformance"
	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/spec"
)

// "Check this source": the conformance suite (package conformance) run
// against a REST or MCP source in the background, on the job queue
// ConformanceQueue, with the source's stored token. Its HTML report is kept
// (the latest ConformanceKeep runs of each source) for an Administrator to
// read and send to the provider's vendor.

// Conformance limits.
const (
	// ConformanceKeep is how many runs of one source are kept; older ones
	// are deleted when a run ends.
	ConformanceKeep = 5
	// ConformanceQueue is the job queue of the checks, worked by one worker
	// in each process: a check walks the provider's collections and is
	// neither urgent nor to be run many at once.
	ConformanceQueue = "conformance"
	// ConformanceTimeout bounds one check; a run still marked running after
	// it (its process died) is shown as not finished.
	ConformanceTimeout = 20 * time.Minute
	// defaultConformanceRate is the most requests a second a check sends
	// unless Config.ConformanceRate says otherwise.
	defaultConformanceRate = 20
	// conformancePageCap bounds the pages of one walk of a check.
	conformancePageCap = 200
)

// States of a ConformanceRun.
const (
	ConformanceQueued  = "queued"
	ConformanceRunning = "running"
	ConformanceDone    = "done"   // the report is kept
	ConformanceFailed  = "failed" // the suite could not run; Error says why
)

// ConformanceRun is one check of a source. Its report is read with
// [Service.ConformanceReport].
type ConformanceRun struct {
	ID          string     `json:"id"`
	SourceID    string     `json:"sourceId"`
	RequestedBy string     `json:"requestedBy"`
	RequestedAt time.Time  `json:"requestedAt"`
	StartedAt   *time.Time `json:"startedAt"`
	FinishedAt  *time.Time `json:"finishedAt"`
	State       string     `json:"state"`
	// The results of a done run, by status.
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Warned  int `json:"warned"`
	Skipped int `json:"skipped"`
	Errored int `json:"errored"`
	// Error says why a failed run could not check the source.
	Error string `json:"error,omitempty"`
}

// Pending reports whether the run is queued or running and may still end.
func (c ConformanceRun) Pending(now time.Time) bool {
	switch {
	case c.State == ConformanceQueued:
		// It waits for a worker of the queue, a day at most.
		return now.Sub(c.RequestedAt) < 24*time.Hour
	case c.State == ConformanceRunning && c.StartedAt != nil:
		// The job's timeout bounds it; past that, its process died.
		return now.Sub(*c.StartedAt) < ConformanceTimeout+time.Minute
	}
	return false
}

// ConformanceArgs is the job that checks one source (run RunID).
type ConformanceArgs struct {
	RunID string `json:"runId"`
}

// Kind implements river.JobArgs.
func (ConformanceArgs) Kind() string { return "aiusage_source_conformance" }

// InsertOpts runs a check once: a check that failed is requested again
// by a person.
func (ConformanceArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: ConformanceQueue, MaxAttempts: 1, UniqueOpts: uniqueWhileQueued}
}

type conformanceWorker struct {
	river.WorkerDefaults[ConformanceArgs]
	s *Service
}

func (w *conformanceWorker) Work(ctx context.Context, job *river.Job[ConformanceArgs]) error {
	err := w.s.runConformance(ctx, job.Args.RunID)
	if errors.Is(err, spec.ErrNotFound) { // the source (and its runs) removed meanwhile
		return river.JobCancel(err)
	}
	return err
}

func (w *conformanceWorker) Timeout(*river.Job[ConformanceArgs]) time.Duration {
	return ConformanceTimeout
}

// conformanceURL returns the base address of the REST interface the suite
// checks for src: a REST source's URL; an MCP source's endpoint without its
// /mcp, where the kit's providers serve REST beside MCP.
func conformanceURL(src Source) (string, error) {
	switch src.Transport {
	case TransportREST:
		return src.URL, nil
	case TransportMCP:
		base, ok := strings.CutSuffix(strings.TrimSuffix(src.URL, "/"), "/mcp")
		if !ok || base == "" {
			return "", fmt.Errorf("the conformance suite checks the REST interface beside an MCP endpoint, and the address of source %s does not end in /mcp: %w",
				src.Name, spec.ErrInvalid)
		}
		return base, nil
	}
	return "", fmt.Errorf("only REST and MCP sources can be checked; %s is a %s source: %w", src.Name, src.Transport, spec.ErrInvalid)
}

// CheckConformance queues a check of source sourceID of organisation
// orgID, requested by requestedBy (a person's name, for the run's page),
// and returns the run. A source that cannot be checked (not REST nor MCP)
// is spec.ErrInvalid; one whose check is queued or running
// spec.ErrConflict; an unknown source spec.ErrNotFound.
func (s *Service) CheckConformance(ctx context.Context, orgID, sourceID, requestedBy string) (ConformanceRun, error) {
	src, err := s.Get(ctx, orgID, sourceID)
	if err != nil {
		return ConformanceRun{}, err
	}
	if _, err := conformanceURL(src); err != nil {
		return ConformanceRun{}, err
	}
	if s.cfg.Jobs == nil {
		return ConformanceRun{}, errors.New("sources: check conformance: no job queue (Config.Jobs)")
	}
	now := s.now()
	runs, err := s.ConformanceRuns(ctx, orgID, src.ID)
	if err != nil {
		return ConformanceRun{}, err
	}
	if len(runs) > 0 && runs[0].Pending(now) {
		return ConformanceRun{}, fmt.Errorf("a check of source %s is already %s, requested at %s: %w", src.Name, runs[0].State,
			runs[0].RequestedAt.Format(time.RFC3339), spec.ErrConflict)
	}
	run := ConformanceRun{ID: uuid.NewString(), SourceID: src.ID, RequestedBy: requestedBy, RequestedAt: now, State: ConformanceQueued}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO source_conformance_runs (id, source_id, org_id, requested_by, requested_at_ms, state)
		VALUES ($1, $2, $3, $4, $5, $6)`, run.ID, src.ID, src.OrganisationID, requestedBy, now.UnixMilli(), run.State); err != nil {
		return ConformanceRun{}, fmt.Errorf("sources: check conformance: %w", err)
	}
	if err := s.cfg.Jobs.Enqueue(ctx, ConformanceArgs{RunID: run.ID}, nil); err != nil {
		_, derr := s.db.ExecContext(context.WithoutCancel(ctx), `DELETE FROM source_conformance_runs WHERE id = $1`, run.ID)
		return ConformanceRun{}, errors.Join(fmt.Errorf("sources: check conformance: %w", err), derr)
	}
	return run, nil
}

const conformanceColumns = `id, source_id, requested_by, requested_at_ms, started_at_ms, finished_at_ms, state,
	passed, failed, warned, skipped, errored, error`

func scanConformanceRun(row interface{ Scan(...any) error }) (ConformanceRun, error) {
	var c ConformanceRun
	var requested int64
	var started, finished sql.NullInt64
	if err := row.Scan(&c.ID, &c.SourceID, &c.RequestedBy, &requested, &started, &finished, &c.State,
		&c.Passed, &c.Failed, &c.Warned, &c.Skipped, &c.Errored, &c.Error); err != nil {
		return ConformanceRun{}, err
	}
	c.RequestedAt = time.UnixMilli(requested).UTC()
	if started.Valid {
		c.StartedAt = timePtr(time.UnixMilli(started.Int64))
	}
	if finished.Valid {
		c.FinishedAt = timePtr(time.UnixMilli(finished.Int64))
	}
	return c, nil
}

// ConformanceRuns returns the kept runs of source sourceID of organisation
// orgID, newest first.
func (s *Service) ConformanceRuns(ctx context.Context, orgID, sourceID string) ([]ConformanceRun, error) {
	src, err := s.Get(ctx, orgID, sourceID)
	if err != nil {
		return nil, err
	}
	return s.conformanceRuns(ctx, `source_id = $1`, src.ID)
}

// LatestConformance returns the newest run of each source of organisation
// orgID that has one, by source id.
func (s *Service) LatestConformance(ctx context.Context, orgID string) (map[string]ConformanceRun, error) {
	org, ok := ident.CanonicalUUID(orgID)
	out := map[string]ConformanceRun{}
	if !ok {
		return out, nil
	}
	runs, err := s.conformanceRuns(ctx, `org_id = $1`, org)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if _, seen := out[r.SourceID]; !seen {
			out[r.SourceID] = r
		}
	}
	return out, nil
}

func (s *Service) conformanceRuns(ctx context.Context, where string, arg string) ([]ConformanceRun, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+conformanceColumns+` FROM source_conformance_runs WHERE `+where+`
		ORDER BY requested_at_ms DESC, id DESC`, arg)
	if err != nil {
		return nil, fmt.Errorf("sources: conformance runs: %w", err)
	}
	defer rows.Close()
	out := []ConformanceRun{}
	for rows.Next() {
		r, err := scanConformanceRun(rows)
		if err != nil {
			return nil, fmt.Errorf("sources: conformance runs: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ConformanceReport returns run runID of source sourceID of organisation
// orgID with its HTML report. A run that is not done, or unknown, is
// spec.ErrNotFound.
func (s *Service) ConformanceReport(ctx context.Context, orgID, sourceID, runID string) (ConformanceRun, []byte, error) {
	src, err := s.Get(ctx, orgID, sourceID)
	if err != nil {
		return ConformanceRun{}, nil, err
	}
	id, ok := ident.CanonicalUUID(runID)
	if !ok {
		return ConformanceRun{}, nil, fmt.Errorf("conformance run %q: %w", runID, spec.ErrNotFound)
	}
	var report sql.NullString
	row := s.db.QueryRowContext(ctx, `SELECT `+conformanceColumns+`, report FROM source_conformance_runs WHERE id = $1 AND source_id = $2`, id, src.ID)
	run, err := scanConformanceRun(scanExtra{row, &report})
	if errors.Is(err, sql.ErrNoRows) || err == nil && !report.Valid {
		return ConformanceRun{}, nil, fmt.Errorf("conformance run %s: %w", id, spec.ErrNotFound)
	}
	if err != nil {
		return ConformanceRun{}, nil, fmt.Errorf("sources: conformance report: %w", err)
	}
	return run, []byte(report.String), nil
}

// scanExtra scans a row with one more column than scanConformanceRun reads.
type scanExtra struct {
	row   interface{ Scan(...any) error }
	extra any
}

func (x scanExtra) Scan(dest ...any) error { return x.row.Scan(append(dest, x.extra)...) }

// runConformance runs the check runID: the suite against the source's
// REST interface, with its stored token, then the report or the reason it
// could not run is stored and the source's older runs are deleted.
func (s *Service) runConformance(ctx context.Context, runID string) error {
	var sourceID string
	err := s.db.QueryRowContext(ctx, `SELECT source_id FROM source_conformance_runs WHERE id = $1`, runID).Scan(&sourceID)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("conformance run %s: %w", runID, spec.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("sources: conformance run %s: %w", runID, err)
	}
	src, err := s.get(ctx, sourceID)
	if err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE source_conformance_runs SET state = $2, started_at_ms = $3 WHERE id = $1`,
		runID, ConformanceRunning, s.now().UnixMilli()); err != nil {
		return fmt.Errorf("sources: conformance run %s: %w", runID, err)
	}
	html, rep, runErr := s.conformanceReport(ctx, src)
	// The outcome is stored even when ctx ended (the job's timeout).
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	now := s.now().UnixMilli()
	// The outcome and the pruning of older runs commit together, so that a
	// run is never seen done beside more than ConformanceKeep runs.
	err = s.db.InTxRetry(wctx, func(tx *sql.Tx) error {
		var err error
		if runErr != nil {
			_, err = tx.ExecContext(wctx, `UPDATE source_conformance_runs SET state = $2, finished_at_ms = $3, error = $4 WHERE id = $1`,
				runID, ConformanceFailed, now, conformanceErrorText(ctx, runErr))
		} else {
			c := rep.Counts()
			_, err = tx.ExecContext(wctx, `UPDATE source_conformance_runs SET state = $2, finished_at_ms = $3, passed = $4, failed = $5,
			warned = $6, skipped = $7, errored = $8, report = $9 WHERE id = $1`, runID, ConformanceDone, now,
				c[conformance.StatusPass], c[conformance.StatusFail], c[conformance.StatusWarn], c[conformance.StatusSkip], c[conformance.StatusError], html)
		}
		if err != nil {
			return fmt.Errorf("sources: conformance run %s: %w", runID, err)
		}
		if _, err := tx.ExecContext(wctx, `DELETE FROM source_conformance_runs WHERE source_id = $1 AND id NOT IN
		(SELECT id FROM source_conformance_runs WHERE source_id = $1 ORDER BY requested_at_ms DESC, id DESC LIMIT $2)`, src.ID, ConformanceKeep); err != nil {
			return fmt.Errorf("sources: conformance run %s: prune: %w", runID, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	attrs := []slog.Attr{slog.String("source", src.ID), slog.String("organisation", src.OrganisationID)}
	if runErr != nil {
		attrs = append(attrs, slog.Any("error", runErr))
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "source checked for conformance", attrs...)
	return nil
}

// conformanceReport runs the suite against src and returns its report and
// the report as HTML.
func (s *Service) conformanceReport(ctx context.Context, src Source) (string, *conformance.Report, error) {
	base, err := conformanceURL(src)
	if err != nil {
		return "", nil, err
	}
	client := *s.client // the guarded transport: a source cannot reach what its syncs may not
	client.Timeout = 30 * time.Second
	rep, err := conformance.Run(ctx, conformance.Config{BaseURL: base, Token: src.Token, Client: &client,
		MaxRate: s.cfg.ConformanceRate, PageCap: conformancePageCap, RequestTimeout: client.Timeout})
	if err != nil {
		return "", nil, err
	}
	var buf bytes.Buffer
	if err := rep.WriteHTML(&buf); err != nil {
		return "", nil, err
	}
	return buf.String(), rep, nil
}

// conformanceErrorText is what a failed run shows of err: one line, at
// most 500 characters.
func conformanceErrorText(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return fmt.Sprintf("the check did not finish within %s", ConformanceTimeout)
	}
	text := strings.Join(strings.Fields(strings.TrimPrefix(err.Error(), "conformance: ")), " ")
	if utf8.RuneCountInString(text) > 500 {
		text = string([]rune(text)[:500]) + "…"
	}
	return text
}
