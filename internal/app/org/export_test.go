package org

// UseWrites returns how many UPDATEs of a key's last use s issued, and how
// many rows they changed.
func UseWrites(s *Store) (statements, rows int64) {
	return s.uses.statements.Load(), s.uses.rows.Load()
}
