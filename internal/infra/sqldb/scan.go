package sqldb

import (
	"database/sql"
	"encoding/json"
	"fmt"
)

// ScanJSON reads rows of one column holding JSON (a record stored as the
// JSON it is served as) and decodes each into a T. It closes rows. The result
// is never nil.
func ScanJSON[T any](rows *sql.Rows) ([]T, error) {
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("sqldb: stored JSON: %w", err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
