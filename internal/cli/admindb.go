package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/keyring"
)

// adminDB is what an admin command works on: the service's database at
// its --database-url, migrated, with the organisation store, and the other
// stores and services on the same database, opened when the command asks
// for them. Every clock stands still at now, the time of the command: a key
// created with the default expiry expires exactly one year after its
// createdAt, and a listing shows every key's status at one instant.
type adminDB struct {
	ctx   context.Context
	e     *env
	flags *adminFlags
	now   time.Time
	// orgs is the organisation store.
	orgs    *org.Store
	ring    *keyring.Keyring
	closers []func()
}

// withDB opens the database at the command's --database-url, migrates it,
// runs fn on it and closes what fn opened.
func (a *adminFlags) withDB(ctx context.Context, e *env, now time.Time, fn func(*adminDB) error) error {
	db, err := openDB(ctx, e.cmd, a.databaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	orgs, err := org.NewStore(ctx, db, org.WithNow(func() time.Time { return now }))
	if err != nil {
		return fmt.Errorf("%s: migrate %s: %w", e.cmd, db.URL(), err)
	}
	d := &adminDB{ctx: ctx, e: e, flags: a, now: now, orgs: orgs}
	defer func() {
		for i := len(d.closers) - 1; i >= 0; i-- {
			d.closers[i]()
		}
	}()
	return fn(d)
}

// print writes v on standard output as one line of compact JSON.
func (d *adminDB) print(v any) error { return writeJSONLine(d.e.stdout, v) }

// keyring returns the keyring of the secrets stored encrypted, from the
// command's key flags.
func (d *adminDB) keyring() (*keyring.Keyring, error) {
	if d.ring == nil {
		ring, _, err := d.flags.secrets.keyring(d.e.cmd, d.e, d.orgs.DB())
		if err != nil {
			return nil, err
		}
		d.ring = ring
	}
	return d.ring, nil
}

// people returns the people store with the settings of c (its DB, Orgs and
// Now are set here).
func (d *adminDB) people(c people.Config) (*people.Store, error) {
	c.DB, c.Orgs, c.Now = d.orgs.DB(), d.orgs, func() time.Time { return d.now }
	p, err := people.New(d.ctx, c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.e.cmd, err)
	}
	return p, nil
}

// sources returns the sources service, reaching what p allows.
func (d *adminDB) sources(p sourcePolicyFlags) (*sources.Service, error) {
	ring, err := d.keyring()
	if err != nil {
		return nil, err
	}
	cfg := sources.Config{DB: d.orgs.DB(), Orgs: d.orgs, Secrets: ring}
	p.config(&cfg)
	src, err := sources.New(d.ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.e.cmd, err)
	}
	d.closers = append(d.closers, func() { _ = src.Close() })
	return src, nil
}

// reviews returns the review-task service. It only queues its jobs
// (webhook deliveries): the running "service serve" works them.
func (d *adminDB) reviews() (*reviewapi.Service, error) {
	ring, err := d.keyring()
	if err != nil {
		return nil, err
	}
	jobs, err := openQueue(d.ctx, d.orgs.DB())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.e.cmd, err)
	}
	d.closers = append(d.closers, jobs.Close)
	svc, err := reviewapi.New(d.ctx, reviewapi.Config{DB: d.orgs.DB(), Orgs: d.orgs, Jobs: jobs, Secrets: ring,
		Now: func() time.Time { return d.now }})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.e.cmd, err)
	}
	return svc, nil
}
