package sqlpage

import (
	"fmt"

	"github.com/aiusage/kit/internal/infra/sqldb"
)

// SizedQuery is the query of a page that sizes its records before it
// loads them, so that a page of large records costs about its byte budget,
// never limit whole records: the rows of a [Sized] page.
type SizedQuery struct {
	// Inner is the keyset query: it selects, in list order (Order, a list
	// of its column names), at most limit+1 rows of the small columns the
	// caller needs, the row's [sqldb.Dialect.RowAddress] named r, and the
	// byte length of the record's JSON as served named n
	// (octet_length(body), which neither SQLite nor PostgreSQL needs to
	// read the body for), and reads no body.
	Inner, Order string
	// Table holds the bodies, in its column body.
	Table string
	// Before and After are the columns of the page's rows before and after
	// the body, each named s.column ("s.t, s.id"; After starts with a
	// comma, or is empty); Tail follows the row's number (", ..." or "").
	Before, After, Tail string
}

// SQL returns the query, its limit and budget added to args. Its rows are
// Before, the body, After, the row's number in list order (from 1), Tail.
// They come out in list order (the plan scans the window's output as it
// is computed; [Reader] checks the row numbers). The body is read for the
// rows within the limit whose JSON, joined by commas with the rows before
// them, takes at most the budget, and always for the first row; the query
// stops at the first row whose body it does not read, which it returns
// with a NULL body: the [Reader] stops there and reports that more follow.
// Everything happens in one statement, and so in one snapshot of the data.
func (q *SizedQuery) SQL(d sqldb.Dialect, args *sqldb.Args, limit, maxBytes int) string {
	limitArg, maxArg := args.Add(limit), args.Add(maxBytes)
	with := fmt.Sprintf("WITH page AS (%s),\nsized AS (SELECT page.*, ROW_NUMBER() OVER w AS i, SUM(n + 1) OVER w - n - 1 AS pre FROM page"+
		" WINDOW w AS (ORDER BY %s ROWS UNBOUNDED PRECEDING))\n", q.Inner, q.Order)
	fits := fmt.Sprintf("s.i <= %s AND (s.i = 1 OR s.pre + s.n <= %s)", limitArg, maxArg)
	// The row that ends the page follows one that fits: it starts at most
	// one byte (a comma) past the budget, or it is the second row (the
	// first always fits); every row after it starts further.
	where := fmt.Sprintf("(s.i <= 2 OR s.pre - 1 <= %s)", maxArg)
	return fmt.Sprintf("%sSELECT %s, CASE WHEN %s THEN (SELECT body FROM %s WHERE %s = s.r) END%s, s.i%s FROM sized s WHERE %s",
		with, q.Before, fits, q.Table, d.RowAddress(), q.After, q.Tail, where)
}
