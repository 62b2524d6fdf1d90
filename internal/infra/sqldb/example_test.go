package sqldb_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing/fstest"

	"github.com/aiusage/kit/internal/infra/sqldb"
)

func Example() {
	ctx := context.Background()
	db, err := sqldb.Open(ctx, "sqlite::memory:")
	if err != nil {
		panic(err)
	}
	defer db.Close()

	// A component would pass its embed.FS; the layout is <dialect>/NNNN_name.sql.
	migrations := fstest.MapFS{
		"sqlite/0001_notes.sql":   {Data: []byte(`CREATE TABLE notes (id TEXT PRIMARY KEY, body TEXT NOT NULL);`)},
		"postgres/0001_notes.sql": {Data: []byte(`CREATE TABLE notes (id TEXT PRIMARY KEY, body TEXT NOT NULL);`)},
	}
	if err := db.Migrate(ctx, "notes", migrations); err != nil {
		panic(err)
	}

	add := func(id, body string) error {
		return db.InTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO notes (id, body) VALUES ($1, $2)`, id, body)
			return err
		})
	}
	fmt.Println(add("n1", "hello"))
	err = add("n1", "again")
	fmt.Println(sqldb.IsUniqueViolation(err))
	// Output:
	// <nil>
	// true
}
