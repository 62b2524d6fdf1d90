package export

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/aiusage/kit/spec"
)

// The bounded reader: a file of an export is checked against its manifest
// and decompressed within the reader's bounds (Config.MaxPlainBytes,
// Config.MaxLineBytes and the record count its manifest names) into lines.

// verify checks b against f (size, SHA-256) and decompresses its lines
// (gzip, line count) within the reader's bounds.
func (s *Source) verify(b []byte, f *spec.ExportFile) (*lines, error) {
	if int64(len(b)) != f.Bytes {
		return nil, fmt.Errorf("%d bytes, the manifest says %d", len(b), f.Bytes)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
		return nil, fmt.Errorf("SHA-256 %s, the manifest says %s", got, f.SHA256)
	}
	// The file's own bound: no more than its records of at most maxLine
	// bytes and their newlines.
	bound := s.maxPlain
	if f.Records < bound/(s.maxLine+1) {
		bound = f.Records * (s.maxLine + 1)
	}
	return inflate(bytes.NewReader(b), f.Records, bound, s.maxLine)
}

// markEvery is how many lines apart lines keeps an offset.
const markEvery = 64

// lines are the lines of a verified file: its decompressed bytes in one
// buffer, each line ending with a newline, and the offset of every
// markEvery-th line, so that a file of tiny lines costs no more than its
// bytes.
type lines struct {
	data  []byte
	marks []int // marks[k] is the offset of line k*markEvery
	n     int
}

func (l *lines) len() int { return l.n }

// size is what l holds in memory, for the cache.
func (l *lines) size() int64 { return int64(cap(l.data)) + int64(cap(l.marks))*8 + 64 }

// offset returns the offset of line i (0 <= i <= len).
func (l *lines) offset(i int) int {
	if i >= l.n {
		return len(l.data)
	}
	off := l.marks[i/markEvery]
	for k := i % markEvery; k > 0; k-- {
		off += bytes.IndexByte(l.data[off:], '\n') + 1
	}
	return off
}

// next returns the line at offset off, without its newline, and the offset
// of the line after it.
func (l *lines) next(off int) ([]byte, int) {
	i := bytes.IndexByte(l.data[off:], '\n')
	return l.data[off : off+i : off+i], off + i + 1
}

// inflate decompresses the gzip stream r into lines: exactly records
// non-empty lines, each ending with a newline. Past bound bytes in all, or
// a line past maxLine bytes, it stops with an error wrapping [ErrTooLarge];
// past records lines, with one saying so: nothing beyond what the bounds
// allow is ever held.
func inflate(r io.Reader, records, bound, maxLine int64) (*lines, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("not gzip: %v", err)
	}
	defer zr.Close()
	l := &lines{}
	start := 0 // the offset of the line being read
	chunk := make([]byte, 64<<10)
	for {
		n, rerr := zr.Read(chunk)
		if n > 0 {
			if int64(len(l.data))+int64(n) > bound {
				return nil, fmt.Errorf("%w: it decompresses past %d bytes (the bound for %d records)", ErrTooLarge, bound, records)
			}
			scan := len(l.data)
			l.data = append(l.data, chunk[:n]...)
			for {
				i := bytes.IndexByte(l.data[scan:], '\n')
				if i < 0 {
					break
				}
				end := scan + i
				if end == start {
					return nil, fmt.Errorf("line %d is empty", l.n+1)
				}
				if int64(end-start) > maxLine {
					return nil, fmt.Errorf("%w: line %d is %d bytes decompressed, more than %d", ErrTooLarge, l.n+1, end-start, maxLine)
				}
				if l.n%markEvery == 0 {
					l.marks = append(l.marks, start)
				}
				l.n++
				if int64(l.n) > records {
					return nil, fmt.Errorf("more than the %d records the manifest says", records)
				}
				start, scan = end+1, end+1
			}
			if int64(len(l.data)-start) > maxLine {
				return nil, fmt.Errorf("%w: line %d decompresses past %d bytes", ErrTooLarge, l.n+1, maxLine)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, fmt.Errorf("gzip: %v", rerr)
		}
	}
	if start < len(l.data) {
		return nil, fmt.Errorf("line %d does not end with a newline", l.n+1)
	}
	if int64(l.n) != records {
		return nil, fmt.Errorf("%d records, the manifest says %d", l.n, records)
	}
	return l, nil
}
