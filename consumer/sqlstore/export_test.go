package sqlstore

import "github.com/aiusage/kit/internal/infra/sqldb"

// DBOf returns the database s works on, for the tests.
func DBOf(s *Store) *sqldb.DB { return s.db }
