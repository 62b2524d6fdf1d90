package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"sync"
)

// Args holds the arguments of a query as it is written (see the package
// documentation's Placeholders).
type Args []any

// Add appends v to the arguments and returns its placeholder ($1, $2, ...).
func (a *Args) Add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// Stmts prepares each query once on a database and keeps the statement
// for every later use. The zero value is ready; it is safe for concurrent
// use.
type Stmts struct {
	m sync.Map // query -> *sql.Stmt
}

// Prepare returns the statement of query on db, preparing it on first use.
func (c *Stmts) Prepare(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	if st, ok := c.m.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := c.m.LoadOrStore(query, st); loaded {
		_ = st.Close() // another goroutine prepared it first
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// Close closes and forgets every statement.
func (c *Stmts) Close() error {
	var errs []error
	c.m.Range(func(k, v any) bool {
		errs = append(errs, v.(*sql.Stmt).Close())
		c.m.Delete(k)
		return true
	})
	return errors.Join(errs...)
}
