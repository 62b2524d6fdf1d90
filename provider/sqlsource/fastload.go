package sqlsource

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/provider"
)

// The fast load of a batch on PostgreSQL.
//
// INSERT ... ON CONFLICT looks every row up in the primary key before it
// inserts it (and inserts it in a way that can be undone), and a multi-row
// INSERT over unnest() inserts its rows one at a time: together, half of
// what the server does to load a batch. COPY does neither: it writes pages
// of rows at once and probes the key only as it inserts. But COPY cannot
// resolve a conflict: a row whose key is stored fails the whole statement,
// and with it the transaction. So a batch COPYs only the rows that no
// earlier write can conflict with, and sends the others through the INSERT
// of [bulkInsert]:
//
//   - The rows of a tenant that had no rows in the table when the batch
//     first wrote to that table (an initial load).
//   - Of those, the rows whose key the batch has not written already: the
//     batch keeps the keys it wrote in a Bloom filter ([keyFilter]), which
//     can answer "maybe written" of a key never written (a row then takes
//     the INSERT, as a row of a tenant that held rows always does) but
//     never "not written" of a key written.
//
// Nothing stops another writer from storing a key of that tenant while the
// batch runs. If the batch then COPYs the same key, the primary key refuses
// it and the batch fails whole ([errConcurrentLoad]): nothing is written
// twice or lost, and the batch, written again, finds the tenant's rows and
// INSERTs. Single writes pay nothing for the fast load.

// fastLoadMaxFilterBytes bounds the memory of a batch's key filter. Past
// it the batch writes every further row with INSERT ... ON CONFLICT.
const fastLoadMaxFilterBytes = 64 << 20

// fastTables are the tables a batch may COPY into.
var fastTables = [...]*bulkInsert{conversationsBulk, assistantsBulk, eventsBulk, usageBulk, rollupsBulk}

// fastLoad reports whether the Source COPYs into PostgreSQL in a batch.
func (s *Source) fastLoad() bool { return s.db.Dialect == Postgres && !s.noCopy }

// copier is the fast load of one batch: the tenants checked, the keys
// written, and the PostgreSQL connection of the batch's transaction. Only
// the batch's background writer uses it.
type copier struct {
	conn    *sql.Conn
	tenants map[string]*tenantCheck
	keys    keyFilter
	copied  [len(fastTables)]int // rows COPYed per table, for tests
}

// tenantCheck is what a batch found of a tenant: per table, whether it
// looked, and whether the tenant had no rows there.
type tenantCheck struct {
	checked, empty [len(fastTables)]bool
}

// errConcurrentLoad is the error of a batch whose COPY into st's table met
// a key that another writer stored while the batch was loading the tenant
// (see the fast load above).
func errConcurrentLoad(st *bulkInsert) error {
	return fmt.Errorf("%w: another writer stored a record of a tenant while this batch was loading it into %s "+
		"(the tenant had no rows there when the batch began writing to it); the batch wrote nothing: write it again",
		provider.ErrConflict, st.table())
}

// errNotPgx is returned through sql.Conn.Raw when the driver is not pgx's.
var errNotPgx = errors.New("sqlsource: the connection is not a pgx stdlib one")

// newCopier returns the copier of a batch whose transaction runs on conn,
// or nil when conn is not a pgx connection (a driver wrapped for tracing,
// say): the batch then INSERTs every row.
func newCopier(conn *sql.Conn) *copier {
	err := conn.Raw(func(dc any) error {
		if _, ok := dc.(*stdlib.Conn); !ok {
			return errNotPgx
		}
		return nil
	})
	if err != nil {
		return nil
	}
	return &copier{conn: conn, tenants: map[string]*tenantCheck{}}
}

// copyable reports whether rows of tenant may be COPYed into table t (of
// fastTables): whether the tenant had no rows there when the batch first
// looked.
func (c *copier) copyable(ctx context.Context, tx *sql.Tx, tenant string, t int) (bool, error) {
	tc := c.tenants[tenant]
	if tc == nil {
		tc = &tenantCheck{}
		c.tenants[tenant] = tc
	}
	if tc.checked[t] {
		return tc.empty[t], nil
	}
	empty, err := emptyTable(ctx, tx, tenant, t)
	if err != nil {
		return false, err
	}
	tc.checked[t], tc.empty[t] = true, empty
	return empty, nil
}

// emptyTable reports whether tenant has no rows in table t of fastTables.
func emptyTable(ctx context.Context, tx *sql.Tx, tenant string, t int) (bool, error) {
	var has bool
	err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+fastTables[t].table()+` WHERE tenant = $1)`, tenant).Scan(&has)
	return !has, err
}

// split returns the rows of st that may be COPYed and the others, in their
// order, and notes every row's key as written.
func (c *copier) split(ctx context.Context, tx *sql.Tx, st *bulkInsert, rows [][]any) (copyRows, insertRows [][]any, err error) {
	t := tableIndex(st)
	for _, row := range rows {
		ok, err := c.copyable(ctx, tx, row[0].(string), t)
		if err != nil {
			return nil, nil, err
		}
		fresh := c.keys.add(t, row[:st.keyCols])
		if ok && fresh {
			copyRows = append(copyRows, row)
		} else {
			insertRows = append(insertRows, row)
		}
	}
	return copyRows, insertRows, nil
}

func tableIndex(st *bulkInsert) int {
	for i, t := range fastTables {
		if t == st {
			return i
		}
	}
	panic(fmt.Sprintf("sqlsource: no fast load into %s", st.table()))
}

// copyFrom COPYs rows into st's table.
func (c *copier) copyFrom(ctx context.Context, st *bulkInsert, rows [][]any) error {
	c.copied[tableIndex(st)] += len(rows)
	return c.conn.Raw(func(dc any) error {
		pc, ok := dc.(*stdlib.Conn)
		if !ok {
			return errNotPgx
		}
		n, err := pc.Conn().CopyFrom(ctx, pgx.Identifier{st.table()}, st.columns(), pgx.CopyFromRows(rows))
		if sqldb.IsUniqueViolation(err) {
			return fmt.Errorf("%w: %w", errConcurrentLoad(st), err)
		}
		if err == nil && n != int64(len(rows)) {
			err = fmt.Errorf("sqlsource: COPY into %s stored %d rows of %d", st.table(), n, len(rows))
		}
		return err
	})
}

// table returns the name of st's table.
func (b *bulkInsert) table() string { return strings.Fields(b.into)[0] }

// columns returns the names of st's columns, in order.
func (b *bulkInsert) columns() []string {
	_, list, _ := strings.Cut(b.into, "(")
	list, _, _ = strings.Cut(list, ")")
	cols := strings.Split(list, ",")
	for i := range cols {
		cols[i] = strings.TrimSpace(cols[i])
	}
	return cols
}

// keyFilter is a Bloom filter of the keys a batch wrote, per table: a chain
// of filters, each twice the size of the one before, which a key is added
// to the last of, so that its memory follows the keys written (2 to 4 bytes
// a key; a false "maybe written" for about one key in a few hundred), up to
// fastLoadMaxFilterBytes.
type keyFilter struct {
	maxBytes int // of the filters; 0: fastLoadMaxFilterBytes
	filters  []bloom
	bytes    int
	full     bool         // past the memory bound: every key is "maybe written"
	h        maphash.Hash // its zero value takes a random seed
	buf      [8]byte
}

type bloom struct {
	bits     []uint64
	mask     uint64 // len(bits)*64 - 1
	keys, at int    // keys added, capacity
}

// The filters' shape: all powers of two, so that a filter's bits are too.
const (
	bloomProbes     = 10
	bloomBitsPerKey = 16
	bloomFirstKeys  = 1 << 14
)

// add notes key (the key columns of a row of table t) as written, and
// reports whether it was surely not written before.
func (f *keyFilter) add(t int, key []any) bool {
	if f.full {
		return false
	}
	h1 := f.hash(t, key)
	h2 := bits.RotateLeft64(h1, 32) | 1
	fresh := true
	for i := range f.filters {
		if f.filters[i].has(h1, h2) {
			fresh = false
			break
		}
	}
	last := len(f.filters) - 1
	if last < 0 || f.filters[last].keys >= f.filters[last].at {
		at := bloomFirstKeys << len(f.filters)
		words := at * bloomBitsPerKey / 64
		if f.bytes+words*8 > cmp.Or(f.maxBytes, fastLoadMaxFilterBytes) {
			f.full = true
			return false
		}
		f.filters = append(f.filters, bloom{bits: make([]uint64, words), mask: uint64(words*64 - 1), at: at})
		f.bytes += words * 8
		last++
	}
	f.filters[last].set(h1, h2)
	return fresh
}

// hash returns the hash of key in table t, its columns kept apart by their
// lengths.
func (f *keyFilter) hash(t int, key []any) uint64 {
	f.h.Reset()
	f.h.WriteByte(byte(t))
	for _, v := range key {
		switch v := v.(type) {
		case string:
			binary.LittleEndian.PutUint64(f.buf[:], uint64(len(v)))
			f.h.Write(f.buf[:])
			f.h.WriteString(v)
		case int64:
			binary.LittleEndian.PutUint64(f.buf[:], uint64(v))
			f.h.Write(f.buf[:])
		default:
			panic(fmt.Sprintf("sqlsource: a key column of type %T", v))
		}
	}
	return f.h.Sum64()
}

func (b *bloom) has(h1, h2 uint64) bool {
	for i := range uint64(bloomProbes) {
		p := (h1 + i*h2) & b.mask
		if b.bits[p/64]&(1<<(p%64)) == 0 {
			return false
		}
	}
	return true
}

func (b *bloom) set(h1, h2 uint64) {
	for i := range uint64(bloomProbes) {
		p := (h1 + i*h2) & b.mask
		b.bits[p/64] |= 1 << (p % 64)
	}
	b.keys++
}
