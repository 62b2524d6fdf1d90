package export

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/spec"
)

// seeds returns the examples of schema name from spec/testdata/examples.
func seeds(f *testing.F, name string) [][]byte {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "spec", "testdata", "examples", name+"*.json"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no examples of %s: %v", name, err)
	}
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func FuzzParseManifest(f *testing.F) {
	for _, b := range seeds(f, "export-manifest") {
		f.Add(b)
	}
	f.Add([]byte(`{"format":"aiusage-export/1","id":"000000000001-20260101T000000000Z","sequence":1,"kind":"full","createdAt":"2026-01-01T00:00:00.000Z","to":"2026-01-01T00:00:00.000Z","files":[{"resource":"usage","path":"usage.ndjson.gz","records":0,"bytes":0,"sha256":""}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			return
		}
		// What ParseManifest accepts is a manifest a reader can follow.
		if spec.CheckExportSetID(m.ID) != nil {
			t.Fatalf("accepted id %q", m.ID)
		}
		for _, file := range m.Files {
			if !fileName.MatchString(file.Path) || file.Path != file.Resource+".ndjson.gz" {
				t.Fatalf("accepted path %q of %s", file.Path, file.Resource)
			}
			if _, err := consumer.ParseResource(file.Resource); err != nil {
				t.Fatalf("accepted resource %q", file.Resource)
			}
		}
	})
}

func FuzzParseIndex(f *testing.F) {
	for _, b := range seeds(f, "export-index") {
		f.Add(b)
	}
	f.Add([]byte(`{"format":"aiusage-export/1","updatedAt":"2026-01-01T00:00:00.000Z","sets":[{"id":"000000000001-20260101T000000000Z","sequence":1,"kind":"full","manifest":"../manifest.json"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		idx, err := ParseIndex(b)
		if err != nil {
			return
		}
		for i, s := range idx.Sets {
			if spec.CheckExportSetID(s.ID) != nil || s.Manifest != s.ID+"/manifest.json" {
				t.Fatalf("accepted set %+v", s)
			}
			if i > 0 && s.Sequence <= idx.Sets[i-1].Sequence {
				t.Fatalf("accepted sequences out of order")
			}
		}
	})
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add(cursor{Resource: "conversations", Sets: []string{"000000000001-20260101T000000000Z"}, Set: 0, Line: 12}.encode())
	f.Add(cursor{Resource: "usage", Sets: []string{"000000000001-20260101T000000000Z", "000000000002-20260101T010000000Z"}, Set: 1, Line: 1000,
		Start: "2026-01-01T00:00:00.000Z", End: "2026-01-02T00:00:00.000Z"}.encode())
	f.Add("")
	f.Add("e30")
	f.Fuzz(func(t *testing.T, text string) {
		for _, r := range consumer.Resources {
			c, err := decodeCursor(text, r)
			if err != nil {
				continue
			}
			if c.Resource != string(r) || c.Set < 0 || c.Set >= len(c.Sets) || c.Line < 0 {
				t.Fatalf("accepted %+v", c)
			}
			for _, id := range c.Sets {
				if spec.CheckExportSetID(id) != nil {
					t.Fatalf("accepted set id %q", id)
				}
			}
		}
	})
}

// FuzzVerify feeds verify files whose manifest entry matches their bytes:
// whatever the content, it returns an error or lines that are exactly the
// newline-terminated, non-empty lines of the decompressed file, within the
// reader's bounds (small ones here, so that the fuzzer reaches them), and
// every line found from its offset is the line found in sequence.
func FuzzVerify(f *testing.F) {
	for _, plain := range []string{"", "{}\n", "{\"id\":\"a\"}\n{\"id\":\"b\"}\n", "no newline", "\n", "a\n\nb\n",
		strings.Repeat("x", 300) + "\n", strings.Repeat("a\n", 200)} {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write([]byte(plain))
		_ = zw.Close()
		f.Add(buf.Bytes(), int64(strings.Count(plain, "\n")))
	}
	f.Add([]byte("not gzip"), int64(0))
	const maxLine, maxPlain = 256, 1024
	s := &Source{maxRaw: 1 << 20, maxPlain: maxPlain, maxLine: maxLine}
	f.Fuzz(func(t *testing.T, b []byte, records int64) {
		sum := sha256.Sum256(b)
		file := &spec.ExportFile{Resource: "events", Path: "events.ndjson.gz", Bytes: int64(len(b)), SHA256: hex.EncodeToString(sum[:]), Records: records}
		lines, err := s.verify(b, file)
		if err != nil {
			return
		}
		if int64(lines.len()) != records {
			t.Fatalf("%d lines for %d records", lines.len(), records)
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("accepted a file that is not gzip: %v", err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("accepted a broken gzip stream: %v", err)
		}
		if len(plain) > maxPlain {
			t.Fatalf("accepted %d bytes decompressed, past the bound of %d", len(plain), maxPlain)
		}
		var joined []byte
		for i, off := 0, 0; i < lines.len(); i++ {
			if got := lines.offset(i); got != off {
				t.Fatalf("line %d at offset %d, found in sequence at %d", i, got, off)
			}
			var l []byte
			l, off = lines.next(off)
			if len(l) == 0 || len(l) > maxLine || bytes.IndexByte(l, '\n') >= 0 {
				t.Fatalf("line %q", l)
			}
			joined = append(append(joined, l...), '\n')
		}
		if !bytes.Equal(joined, plain) {
			t.Fatal("the lines are not the file")
		}
	})
}
