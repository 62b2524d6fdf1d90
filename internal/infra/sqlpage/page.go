package sqlpage

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/provider"
)

// CheckLimit returns [provider.ErrInvalid] unless limit is between 1 and
// [provider.MaxLimit].
func CheckLimit(limit int) error {
	if limit < 1 || limit > provider.MaxLimit {
		return provider.Invalid("limit", "must be between 1 and %d, not %d", provider.MaxLimit, limit)
	}
	return nil
}

// Position returns the keyset position of k (its time in milliseconds and
// its id), or nil for nil.
func Position(k *provider.Key) *sqldb.Position {
	if k == nil {
		return nil
	}
	return &sqldb.Position{Millis: sqldb.Millis(k.Time), ID: k.ID}
}

// Mode says which query reads a page, and so what its rows hold after the
// columns of the caller.
type Mode int

const (
	// Plain rows hold every body: a page without a byte budget.
	Plain Mode = iota
	// Guarded rows hold the bodies of at most [GuardBytes] (NULL
	// otherwise), then each row's byte length: the first query of a page
	// with a byte budget.
	Guarded
	// Sized rows are those of a [SizedQuery]: the body NULL in the row that
	// ends the page, then the row's number.
	Sized
)

// ModeOf is the mode of the first query of a page with byte budget
// maxBytes: Guarded with a budget, Plain without (0).
func ModeOf(maxBytes int) Mode {
	if maxBytes > 0 {
		return Guarded
	}
	return Plain
}

// GuardBytes is the largest body the Guarded query of a page reads: limit+1
// of them take at most the budget.
func GuardBytes(maxBytes, limit int) int { return maxBytes / (limit + 1) }

// ErrSized is a [Reader]'s answer to a Guarded query that left out a body
// the page needs.
var ErrSized = errors.New("sqlpage: a body of the page was left out")

// Read reads a page with read: Plain without a byte budget (maxBytes 0);
// with one, Guarded first and, when that is [ErrSized], Sized. Either way
// no more than about the budget of bodies is read.
func Read[P any](maxBytes int, read func(Mode) (P, error)) (P, error) {
	if ModeOf(maxBytes) == Plain {
		return read(Plain)
	}
	p, err := read(Guarded)
	if errors.Is(err, ErrSized) {
		return read(Sized)
	}
	return p, err
}

// Reader reads a page from the rows of a page's query.
type Reader struct {
	// Limit is the page's limit; MaxBytes its byte budget (0: none), the
	// records' JSON joined by commas as the list serves them.
	Limit, MaxBytes int
	// Mode is the mode of the query.
	Mode Mode
	// Dest are the scan destinations of the caller's columns, Body among
	// them; Tail those of the columns after the mode's own (the byte length
	// of a Guarded row, the number of a Sized one).
	Dest, Tail []any
	// Body is the destination of the body, nil when the query left it out.
	Body *sql.RawBytes
	// Append appends the JSON of the row last scanned, as the list serves
	// it, to buf, and returns buf and the record's key.
	Append func(buf []byte) ([]byte, provider.Key, error)
	// DBError turns an error of the driver into the caller's.
	DBError func(error) error
}

// Read reads a page of at most r.Limit records, and whether more follow,
// from rows: with a byte budget, the page ends at the first record past it
// (a page always holds one record). A Guarded query that left out a body
// the page needs is [ErrSized]. The records' JSON lies in one buffer,
// joined by commas, each slice's capacity reaching into the next record
// (see [provider.RawRecord]).
func (r *Reader) Read(rows *sql.Rows) (provider.Page[provider.RawRecord], error) {
	n := min(r.Limit, 128)
	keys := make([]provider.Key, 0, n)
	starts := make([]int, 0, n)
	ends := make([]int, 0, n)
	var (
		buf     []byte
		hasMore bool
		extra   int64 // the byte length (Guarded), the row number (Sized)
		size    int   // of the records so far, joined by commas, as Guarded rows size them
	)
	dest := r.Dest
	if r.Mode != Plain {
		dest = append(dest[:len(dest):len(dest)], &extra)
	}
	dest = append(dest[:len(dest):len(dest)], r.Tail...)
rows:
	for rows.Next() {
		if len(keys) == r.Limit {
			hasMore = true
			break
		}
		if err := rows.Scan(dest...); err != nil {
			return provider.Page[provider.RawRecord]{}, r.DBError(err)
		}
		body := *r.Body
		switch r.Mode {
		case Guarded:
			if len(keys) > 0 && size+1+int(extra) > r.MaxBytes {
				hasMore = true // the record past the budget
				break rows
			}
			if body == nil {
				return provider.Page[provider.RawRecord]{}, ErrSized
			}
			if len(keys) > 0 {
				size++
			}
			size += int(extra)
		case Sized:
			if extra != int64(len(keys)+1) {
				return provider.Page[provider.RawRecord]{}, r.DBError(fmt.Errorf("sized page: row %d came as row %d", extra, len(keys)+1))
			}
			if body == nil { // the record past the limit or the budget
				hasMore = true
				break rows
			}
		}
		if buf == nil {
			buf = make([]byte, 0, bufferSize(len(body), r.Limit, r.MaxBytes))
		} else {
			// The records lie as the list serves them, joined by commas
			// (see provider.RawRecord): the handler writes them as they are.
			buf = append(buf, ',')
		}
		starts = append(starts, len(buf))
		var (
			key provider.Key
			err error
		)
		if buf, key, err = r.Append(buf); err != nil {
			return provider.Page[provider.RawRecord]{}, err
		}
		keys = append(keys, key)
		ends = append(ends, len(buf))
	}
	if err := rows.Err(); err != nil {
		return provider.Page[provider.RawRecord]{}, r.DBError(err)
	}
	if cap(buf) > len(buf)+len(buf)/2 {
		buf = bytes.Clone(buf) // a short page: keep (and cache) no more than its bytes
	}
	items := make([]provider.RawRecord, len(keys))
	for i, end := range ends {
		// Not capped at end: the capacity reaches into the next record.
		items[i] = provider.RawRecord{Key: keys[i], JSON: json.RawMessage(buf[starts[i]:end])}
	}
	return provider.Page[provider.RawRecord]{Items: items, HasMore: hasMore}, nil
}

// bufferSize is the capacity to start a page's buffer with, given its
// first record's size: room for the page (up to 128 records) if its
// records are about the size of the first, but no more than the byte
// budget (when there is one) and the first record allow.
func bufferSize(first, limit, maxBytes int) int {
	n := min(limit, 128)
	size := (first+1)*n + first*n/4
	if maxBytes > 0 {
		size = min(size, max(maxBytes, first)+64)
	}
	return size
}

// Decode decodes a page of stored JSON into records; op prefixes its
// errors.
func Decode[T any](op string, p provider.Page[provider.RawRecord], err error) (provider.Page[T], error) {
	if err != nil {
		return provider.Page[T]{}, err
	}
	items := make([]T, len(p.Items))
	for i, r := range p.Items {
		if err := json.Unmarshal(r.JSON, &items[i]); err != nil {
			return provider.Page[T]{}, fmt.Errorf("%s: stored record %q: %v", op, r.Key.ID, err)
		}
	}
	return provider.Page[T]{Items: items, HasMore: p.HasMore}, nil
}
