package sqldb

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// PostgreSQL SQLSTATE codes, see https://www.postgresql.org/docs/current/errcodes-appendix.html.
const (
	pgUniqueViolation     = "23505"
	pgForeignKeyViolation = "23503"
)

// IsUniqueViolation reports whether err, or an error it wraps, is a
// violation of a UNIQUE or PRIMARY KEY constraint: SQLite's
// SQLITE_CONSTRAINT_UNIQUE or SQLITE_CONSTRAINT_PRIMARYKEY, or PostgreSQL's
// unique_violation (23505). Stores use it to return their conflict error
// instead of the driver's.
func IsUniqueViolation(err error) bool {
	if code, ok := sqliteCode(err); ok {
		return code == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return pgCode(err) == pgUniqueViolation
}

// IsForeignKeyViolation reports whether err, or an error it wraps, is a
// violation of a FOREIGN KEY constraint: SQLite's
// SQLITE_CONSTRAINT_FOREIGNKEY or PostgreSQL's foreign_key_violation (23503).
func IsForeignKeyViolation(err error) bool {
	if code, ok := sqliteCode(err); ok {
		return code == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
	}
	return pgCode(err) == pgForeignKeyViolation
}

// sqliteCode returns the extended result code of a modernc.org/sqlite error.
func sqliteCode(err error) (int, bool) {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code(), true
	}
	return 0, false
}

// pgCode returns the SQLSTATE of a PostgreSQL error, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// PostgreSQL SQLSTATE codes of transactions that failed only because of
// concurrent ones.
const (
	pgSerializationFailure = "40001"
	pgDeadlockDetected     = "40P01"
)

// IsRetryable reports whether err, or an error it wraps, failed a
// transaction only because of concurrent ones, so that running the whole
// transaction again may succeed: SQLite's SQLITE_BUSY or SQLITE_LOCKED (the
// busy timeout ran out), or PostgreSQL's serialization_failure (40001) or
// deadlock_detected (40P01).
func IsRetryable(err error) bool {
	if code, ok := sqliteCode(err); ok {
		primary := code & 0xff
		return primary == sqlite3.SQLITE_BUSY || primary == sqlite3.SQLITE_LOCKED
	}
	switch pgCode(err) {
	case pgSerializationFailure, pgDeadlockDetected:
		return true
	}
	return false
}
