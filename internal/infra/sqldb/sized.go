package sqldb

import "fmt"

// RowAddress is the expression that addresses a row of a table within one
// statement: SQLite's rowid, PostgreSQL's ctid. A keyset page that sizes
// its rows before it loads them (see [SizedPage]) selects it, and reads
// each body that fits by it: a lookup cheaper than the primary key's.
func (d Dialect) RowAddress() string {
	if d == Postgres {
		return "ctid"
	}
	return "rowid"
}

// Sized is the frame of a keyset query that sizes a page's records before
// it loads them, so that a page of large records costs about its byte
// budget, never limit whole records. [SizedPage] builds it.
type Sized struct {
	// With starts the query: the page's rows, numbered and sized, as the
	// table "sized". Select from it as "sized s".
	With string
	// Fits is the condition under which the query reads a row's body: the
	// row is within the limit and its JSON fits the budget.
	Fits string
	// Where keeps the rows up to and including the first that does not fit
	// (the one that says more follow), none after it.
	Where string
}

// SizedPage returns the frame of a sized keyset query. inner is the keyset
// query: it selects, in list order (order, a list of its column names), at
// most limit+1 rows of the small columns the caller needs, the row's
// [Dialect.RowAddress] named r, and the byte length of the record's JSON
// as served named n (octet_length(body), which neither SQLite nor
// PostgreSQL needs to read the body for), and reads no body. limitArg and
// maxArg are the placeholders of the limit and the byte budget (at least
// 1). The caller selects, from "sized s", its columns, then
//
//	CASE WHEN <Fits> THEN (SELECT body FROM table WHERE <address> = s.r) END
//
// and s.i, the row's number in list order (from 1), then "WHERE <Where>".
// The rows come out in list order (the plan scans the window's output as
// it is computed; the reader checks s.i). The body is read for the rows
// within the limit whose JSON, joined by commas with the rows before them,
// takes at most the budget, and always for the first row; the query stops
// at the first row whose body it does not read, which it returns with a
// NULL body: a page's reader stops there and reports that more follow.
// Everything happens in one statement, and so in one snapshot of the data.
func SizedPage(inner, order, limitArg, maxArg string) Sized {
	return Sized{
		With: fmt.Sprintf("WITH page AS (%s),\nsized AS (SELECT page.*, ROW_NUMBER() OVER w AS i, SUM(n + 1) OVER w - n - 1 AS pre FROM page"+
			" WINDOW w AS (ORDER BY %s ROWS UNBOUNDED PRECEDING))\n", inner, order),
		Fits: fmt.Sprintf("s.i <= %s AND (s.i = 1 OR s.pre + s.n <= %s)", limitArg, maxArg),
		// The row that ends the page follows one that fits: it starts at
		// most one byte (a comma) past the budget, or it is the second row
		// (the first always fits); every row after it starts further.
		Where: fmt.Sprintf("(s.i <= 2 OR s.pre - 1 <= %s)", maxArg),
	}
}
