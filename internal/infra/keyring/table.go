package keyring

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Table describes the secret columns of a table for [Table.Reseal] and
// [Table.KeyIDs]: the names are the schema's, never user input.
type Table struct {
	// Name is the table.
	Name string
	// ID is its primary key column, of type TEXT: the Row of each value's
	// Binding.
	ID string
	// KeyID is the column holding the id of the key that sealed the row's
	// values. A row whose KeyID is NULL was sealed by no key: it is corrupt,
	// [Table.Reseal], [Table.KeyIDs] and [Table.Check] pass it by, and
	// reading it is an error naming the row.
	KeyID string
	// Columns are the sealed columns (TEXT). A NULL stays NULL.
	Columns []string
}

// resealBatch is how many rows Reseal reads per query.
const resealBatch = 100

// Binding returns the binding of column in row id.
func (t Table) Binding(column, id string) Binding {
	return Binding{Table: t.Name, Column: column, Row: id}
}

// Reseal seals under ring's current key the values of every row of t
// sealed under another key of ring; a row whose KeyID is NULL is corrupt
// and left as it is. Each row is updated on its own, by one UPDATE that
// applies only if the row is still as it was read, so an interrupted run
// leaves every row either as it was or resealed, and a run after it picks
// up where it stopped; a row changed meanwhile is left for the next run.
// It returns how many rows it resealed. A row that does not open (a key
// ring lacking its key, a corrupted value) stops it with an error naming
// the row.
//
// db takes "$n" placeholders (SQLite and PostgreSQL both do).
func (t Table) Reseal(ctx context.Context, db *sql.DB, ring *Keyring) (int, error) {
	cols := strings.Join(t.Columns, ", ")
	q := fmt.Sprintf(`SELECT %s, %s, %s FROM %s WHERE %s > $1 AND %s IS NOT NULL AND %s <> $2 ORDER BY %s LIMIT %d`,
		t.ID, t.KeyID, cols, t.Name, t.ID, t.KeyID, t.KeyID, t.ID, resealBatch)
	done, last := 0, ""
	for {
		rows, err := t.batch(ctx, db, q, []any{last, ring.Current()})
		if err != nil {
			return done, fmt.Errorf("keyring: reseal %s: %w", t.Name, err)
		}
		for _, r := range rows {
			ok, err := t.resealRow(ctx, db, ring, r)
			if err != nil {
				return done, fmt.Errorf("keyring: reseal %s: %w", t.Name, err)
			}
			if ok {
				done++
			}
		}
		if len(rows) < resealBatch {
			return done, nil
		}
		last = rows[len(rows)-1].id
	}
}

type row struct {
	id     string
	keyID  string
	values []sql.NullString
}

func (t Table) batch(ctx context.Context, db *sql.DB, q string, args []any) ([]row, error) {
	rs, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		r := row{values: make([]sql.NullString, len(t.Columns))}
		dst := []any{&r.id, &r.keyID}
		for i := range r.values {
			dst = append(dst, &r.values[i])
		}
		if err := rs.Scan(dst...); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

// resealRow reseals one row and reports whether it was updated.
func (t Table) resealRow(ctx context.Context, db *sql.DB, ring *Keyring, r row) (bool, error) {
	var set, cond []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	var newID string
	for i, col := range t.Columns {
		v := r.values[i]
		if !v.Valid {
			cond = append(cond, col+" IS NULL")
			continue
		}
		plain, err := ring.Open(r.keyID, v.String, t.Binding(col, r.id))
		if err != nil {
			return false, err
		}
		id, sealed, err := ring.Seal(plain, t.Binding(col, r.id))
		if err != nil {
			return false, err
		}
		newID = id
		set = append(set, col+" = "+arg(sealed))
		cond = append(cond, col+" = "+arg(v.String))
	}
	if newID == "" {
		newID = ring.Current() // every value NULL: mark the row sealed all the same
	}
	set = append(set, t.KeyID+" = "+arg(newID))
	cond = append(cond, t.KeyID+" = "+arg(r.keyID))
	cond = append(cond, t.ID+" = "+arg(r.id))
	res, err := db.ExecContext(ctx, `UPDATE `+t.Name+` SET `+strings.Join(set, ", ")+` WHERE `+strings.Join(cond, " AND "), args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// KeyIDs counts the rows of t by the key that sealed them. A row whose
// KeyID is NULL, sealed by no key, is not counted.
func (t Table) KeyIDs(ctx context.Context, db *sql.DB) (map[string]int, error) {
	rs, err := db.QueryContext(ctx, `SELECT `+t.KeyID+`, COUNT(*) FROM `+t.Name+` WHERE `+t.KeyID+` IS NOT NULL GROUP BY `+t.KeyID)
	if err != nil {
		return nil, fmt.Errorf("keyring: count %s: %w", t.Name, err)
	}
	defer rs.Close()
	out := map[string]int{}
	for rs.Next() {
		var id string
		var n int
		if err := rs.Scan(&id, &n); err != nil {
			return nil, err
		}
		out[id] += n
	}
	return out, rs.Err()
}

// ErrNoKeyring is returned by the stores given no keyring.
var ErrNoKeyring = errors.New("no secret keyring (the key that encrypts stored secrets)")

// Check opens one sealed value of t per key id found in it, so that a
// keyring lacking a key, or holding another key under the same id, is told
// at start rather than at the first read of a secret. The error names the
// key id, the row and where to look.
func (t Table) Check(ctx context.Context, db *sql.DB, ring *Keyring) error {
	ids, err := t.KeyIDs(ctx, db)
	if err != nil {
		return err
	}
	for id := range ids {
		if !ring.Has(id) {
			return fmt.Errorf("keyring: %d rows of %s are sealed under key id %q, which the keyring does not hold: %w",
				ids[id], t.Name, id, ErrUnknownKey)
		}
		var rowID string
		values := make([]sql.NullString, len(t.Columns))
		dst := []any{&rowID}
		for i := range values {
			dst = append(dst, &values[i])
		}
		q := fmt.Sprintf(`SELECT %s, %s FROM %s WHERE %s = $1 ORDER BY %s LIMIT 1`, t.ID, strings.Join(t.Columns, ", "), t.Name, t.KeyID, t.ID)
		if err := db.QueryRowContext(ctx, q, id).Scan(dst...); err != nil {
			return fmt.Errorf("keyring: check %s: %w", t.Name, err)
		}
		for i, v := range values {
			if v.Valid {
				if _, err := ring.Open(id, v.String, t.Binding(t.Columns[i], rowID)); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}
