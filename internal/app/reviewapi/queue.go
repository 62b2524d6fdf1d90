package reviewapi

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

	"github.com/aiusage/kit/internal/infra/sqldb"
)

// jobs is the River client of the service, over either driver: River's
// clients are generic in the transaction type of their driver (*sql.Tx for
// SQLite, pgx.Tx for PostgreSQL), and the service needs neither.
type jobs interface {
	insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) error
	start(ctx context.Context) error
	stop(ctx context.Context) error
	close()
}

type riverJobs[TTx any] struct {
	client *river.Client[TTx]
	closer func()
}

func (j *riverJobs[TTx]) insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) error {
	_, err := j.client.Insert(ctx, args, opts)
	return err
}

func (j *riverJobs[TTx]) start(ctx context.Context) error { return j.client.Start(ctx) }
func (j *riverJobs[TTx]) stop(ctx context.Context) error  { return j.client.Stop(ctx) }
func (j *riverJobs[TTx]) close()                          { j.closer() }

// riverLockKey serialises River's migrations between processes starting at
// once on one PostgreSQL database.
const riverLockKey = 0x61697573616765 // "aiusage"

// newJobs opens River on db: on SQLite over a pool of its own with one
// connection (River's SQLite driver wants it so), on PostgreSQL over a pgx
// pool. It applies River's migrations first.
func newJobs(ctx context.Context, db *sqldb.DB, cfg *river.Config) (jobs, error) {
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
			return nil, fmt.Errorf("reviewapi: river: %w", err)
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
			return nil, fmt.Errorf("reviewapi: river: %w", err)
		}
		return &riverJobs[pgx.Tx]{client: client, closer: pool.Close}, nil
	}
	return nil, errors.New("reviewapi: unknown database dialect")
}

func migrateRiver[TTx any](ctx context.Context, driver riverdriver.Driver[TTx]) error {
	m, err := rivermigrate.New[TTx](driver, nil)
	if err != nil {
		return fmt.Errorf("reviewapi: river migrations: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("reviewapi: river migrations: %w", err)
	}
	return nil
}
