// Package riverjobs opens River, the job queue of the kit's background work,
// on a database of package sqldb: SQLite or PostgreSQL, with River's
// migrations applied. The service (package internal/app/server) opens one
// client for the background work of all its features, which register their
// workers, queues and periodic jobs on a [Jobs] and queue through an
// [Enqueuer]; a vendor's pusher (package provider/push) opens its own for its
// push deliveries.
package riverjobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/aiusage/kit/internal/infra/sqldb"
)

// Client is a River client over either driver: River's clients are generic
// in the transaction type of their driver (*sql.Tx for SQLite, pgx.Tx for
// PostgreSQL), and its users need neither.
type Client interface {
	// Insert queues a job, as [river.Client.Insert] does.
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	// Enqueue queues a job as Insert does, for an [Enqueuer].
	Enqueue(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) error
	// JobList lists jobs, as [river.Client.JobList] does.
	JobList(ctx context.Context, params *river.JobListParams) (*river.JobListResult, error)
	// Start starts working the queues of the configuration.
	Start(ctx context.Context) error
	// Stop stops working, waiting for the jobs in progress.
	Stop(ctx context.Context) error
	// Close closes the pool opened for River.
	Close()
}

type riverJobs[TTx any] struct {
	client *river.Client[TTx]
	closer func()
}

func (j *riverJobs[TTx]) Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	return j.client.Insert(ctx, args, opts)
}

func (j *riverJobs[TTx]) Enqueue(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) error {
	_, err := j.client.Insert(ctx, args, opts)
	return err
}

func (j *riverJobs[TTx]) JobList(ctx context.Context, params *river.JobListParams) (*river.JobListResult, error) {
	return j.client.JobList(ctx, params)
}

func (j *riverJobs[TTx]) Start(ctx context.Context) error { return j.client.Start(ctx) }
func (j *riverJobs[TTx]) Stop(ctx context.Context) error  { return j.client.Stop(ctx) }
func (j *riverJobs[TTx]) Close()                          { j.closer() }

// riverLockKey serialises River's migrations between processes starting at
// once on one PostgreSQL database.
const riverLockKey = 0x61697573616765 // "aiusage"

// Open opens River on db: on SQLite over a pool of its own with one
// connection (River's SQLite driver wants it so), on PostgreSQL over a pgx
// pool. It applies River's migrations first.
func Open(ctx context.Context, db *sqldb.DB, cfg *river.Config) (Client, error) {
	switch db.Dialect {
	case sqldb.SQLite:
		pool, err := db.SQLitePool(1)
		if err != nil {
			return nil, err
		}
		driver := riversqlite.New(pool)
		if err := migrateRiver(ctx, driver); err != nil {
			_ = pool.Close()
			return nil, err
		}
		client, err := river.NewClient[*sql.Tx](driver, cfg)
		if err != nil {
			_ = pool.Close()
			return nil, fmt.Errorf("riverjobs: river: %w", err)
		}
		return &riverJobs[*sql.Tx]{client: client, closer: func() { _ = pool.Close() }}, nil
	case sqldb.Postgres:
		pool, err := db.PgxPool(ctx)
		if err != nil {
			return nil, err
		}
		driver := riverpgxv5.New(pool)
		err = func() error {
			conn, err := pool.Acquire(ctx)
			if err != nil {
				return err
			}
			defer conn.Release()
			if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, riverLockKey); err != nil {
				return err
			}
			defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, riverLockKey) }()
			return migrateRiver(ctx, driver)
		}()
		if err != nil {
			pool.Close()
			return nil, err
		}
		client, err := river.NewClient[pgx.Tx](driver, cfg)
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("riverjobs: river: %w", err)
		}
		return &riverJobs[pgx.Tx]{client: client, closer: pool.Close}, nil
	}
	return nil, errors.New("riverjobs: unknown database dialect")
}

func migrateRiver[TTx any](ctx context.Context, driver riverdriver.Driver[TTx]) error {
	m, err := rivermigrate.New[TTx](driver, nil)
	if err != nil {
		return fmt.Errorf("riverjobs: river migrations: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("riverjobs: river migrations: %w", err)
	}
	return nil
}
