package providertest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

// usageQuery returns the parameters of a /usage request over an explicit
// range.
func usageQuery(granularity string, start, end time.Time, groupBy ...string) url.Values {
	q := vals("granularity", granularity, "startAt", timeParam(start), "endAt", timeParam(end))
	if len(groupBy) > 0 {
		q.Set("groupBy", strings.Join(groupBy, ","))
	}
	return q
}

// withParams returns a copy of q with kv set (an empty value deletes).
func withParams(q url.Values, kv ...string) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			out.Del(kv[i])
		} else {
			out.Set(kv[i], kv[i+1])
		}
	}
	return out
}

func docs(t *testing.T, raws []json.RawMessage) []any {
	t.Helper()
	out := make([]any, 0, len(raws))
	for _, raw := range raws {
		out = append(out, decodeAny(t, raw))
	}
	return out
}

func testCursorReplay(t *testing.T, e *env) {
	cases := []struct {
		path  string
		q     url.Values
		limit int
	}{
		{"/conversations", nil, 3},
		{"/conversations", vals("updatedSince", timeParam(base.Add(2*time.Hour))), 2},
		{"/assistants", nil, 2},
		{"/events", vals("occurredAfter", timeParam(base.Add(time.Hour))), 4},
		{"/events", vals("category", "Access"), 1},
		{"/usage", usageQuery("hour", base, base.Add(24*time.Hour), "model"), 7},
	}
	for _, tc := range cases {
		name := strings.TrimPrefix(target(tc.path, tc.q), "/")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			page := func(cursor string) page {
				t.Helper()
				return e.c.list(t, full, tc.path, withParams(tc.q, "cursor", cursor, "limit", fmt.Sprint(tc.limit)))
			}
			// The same cursor twice, before any later page.
			first := page("")
			if !first.HasMore {
				t.Fatalf("GET %s: a single page, the check needs more", target(tc.path, tc.q))
			}
			a, b := page(*first.NextCursor), page(*first.NextCursor)
			if !reflect.DeepEqual(docs(t, a.Data), docs(t, b.Data)) || a.HasMore != b.HasMore {
				t.Errorf("GET %s: the same cursor twice gave different pages", target(tc.path, tc.q))
			}
			// Every cursor of a walk again, last first, after the walk.
			w := e.c.walk(t, full, tc.path, tc.q, walkOpts{limits: []int{tc.limit}})
			for i := len(w.cursors) - 1; i >= 0; i-- {
				p := page(w.cursors[i])
				if got, want := docs(t, p.Data), docs(t, w.pages[i+1]); !reflect.DeepEqual(got, want) {
					t.Errorf("GET %s: cursor %d replayed after the walk gave another page:\n got: %s\nwant: %s", target(tc.path, tc.q), i+1, compact(got), compact(want))
				}
				if wantMore := i+2 < len(w.pages); p.HasMore != wantMore {
					t.Errorf("GET %s: cursor %d replayed: hasMore %v, want %v", target(tc.path, tc.q), i+1, p.HasMore, wantMore)
				}
			}
			if len(w.cursors) > 0 {
				again := page(w.cursors[0])
				if !reflect.DeepEqual(docs(t, again.Data), docs(t, a.Data)) {
					t.Errorf("GET %s: the first cursor of another walk gave another page", target(tc.path, tc.q))
				}
			}
		})
	}
}

// cursorOf returns the nextCursor of the first page of path?q.
func cursorOf(t *testing.T, e *env, cr cred, path string, q url.Values) string {
	t.Helper()
	p := e.c.list(t, cr, path, q)
	if !p.HasMore {
		t.Fatalf("GET %s: a single page, the check needs a cursor", target(path, q))
	}
	return *p.NextCursor
}

// badCursor checks that GET path?q is a 400 problem naming cursor.
func badCursor(t *testing.T, e *env, cr cred, why, path string, q url.Values) {
	t.Helper()
	r := e.c.get(t, cr, path, q)
	if r.status != http.StatusBadRequest {
		t.Errorf("%s: %v: want 400 naming cursor", why, r)
		return
	}
	r.problem(t, http.StatusBadRequest, "cursor")
}

func testCursorMisuse(t *testing.T, e *env) {
	since := timeParam(base.Add(time.Hour))
	conv := cursorOf(t, e, full, "/conversations", vals("limit", "2"))
	convSince := cursorOf(t, e, full, "/conversations", vals("limit", "2", "updatedSince", since))
	asst := cursorOf(t, e, full, "/assistants", vals("limit", "2"))
	ev := cursorOf(t, e, full, "/events", vals("limit", "1", "category", "Access"))
	uq := usageQuery("hour", base, base.Add(24*time.Hour), "model")
	use := cursorOf(t, e, full, "/usage", withParams(uq, "limit", "2"))

	// Changed or missing filters.
	badCursor(t, e, full, "updatedSince changed", "/conversations", vals("cursor", convSince, "updatedSince", timeParam(base.Add(2*time.Hour))))
	badCursor(t, e, full, "updatedSince left out", "/conversations", vals("cursor", convSince))
	badCursor(t, e, full, "updatedSince added", "/conversations", vals("cursor", conv, "updatedSince", since))
	badCursor(t, e, full, "startedAfter added", "/conversations", vals("cursor", conv, "startedAfter", since))
	badCursor(t, e, full, "startedAfter added", "/conversations", vals("cursor", convSince, "updatedSince", since, "startedAfter", since))
	badCursor(t, e, full, "updatedSince added", "/assistants", vals("cursor", asst, "updatedSince", since))
	badCursor(t, e, full, "category changed", "/events", vals("cursor", ev, "category", "Configuration"))
	badCursor(t, e, full, "category left out", "/events", vals("cursor", ev))
	badCursor(t, e, full, "occurredAfter added", "/events", vals("cursor", ev, "category", "Access", "occurredAfter", since))
	badCursor(t, e, full, "groupBy changed", "/usage", withParams(uq, "cursor", use, "groupBy", "userId"))
	badCursor(t, e, full, "groupBy left out", "/usage", withParams(uq, "cursor", use, "groupBy", ""))
	badCursor(t, e, full, "granularity changed", "/usage", withParams(uq, "cursor", use, "granularity", "day"))
	badCursor(t, e, full, "startAt changed", "/usage", withParams(uq, "cursor", use, "startAt", timeParam(base.Add(time.Hour))))
	badCursor(t, e, full, "endAt changed", "/usage", withParams(uq, "cursor", use, "endAt", timeParam(base.Add(48*time.Hour))))

	// Another endpoint's cursor.
	badCursor(t, e, full, "a /conversations cursor", "/assistants", vals("cursor", conv))
	badCursor(t, e, full, "a /conversations cursor", "/events", vals("cursor", conv))
	badCursor(t, e, full, "a /conversations cursor", "/usage", vals("cursor", conv))
	badCursor(t, e, full, "an /assistants cursor", "/conversations", vals("cursor", asst))
	badCursor(t, e, full, "an /events cursor", "/conversations", vals("cursor", ev))
	badCursor(t, e, full, "a /usage cursor", "/conversations", vals("cursor", use))
	badCursor(t, e, full, "a /usage cursor", "/events", vals("cursor", use))

	// Unknown parameters are ignored, and limit may change: these are fine.
	e.c.list(t, full, "/events", vals("cursor", ev, "category", "Access", "x-unknown", "1", "limit", "3"))
	e.c.list(t, full, "/conversations", vals("cursor", conv, "limit", "1000"))

	// Another tenant's token.
	badCursor(t, e, other, "a cursor of tenant t1 with the token of t2", "/conversations", vals("cursor", conv))
	badCursor(t, e, other, "a cursor of tenant t1 with the token of t2", "/events", vals("cursor", ev, "category", "Access"))
	badCursor(t, e, other, "a cursor of tenant t1 with the token of t2", "/usage", withParams(uq, "cursor", use))

	// No token at all: 401, whatever the cursor.
	r := e.c.get(t, anonymous, "/conversations", vals("cursor", conv))
	r.problem(t, http.StatusUnauthorized)
	r = e.c.get(t, anonymous, "/usage", withParams(uq, "cursor", use))
	r.problem(t, http.StatusUnauthorized)
}

// tampered returns malformed variants of a valid cursor c.
func tampered(c string) map[string]string {
	flip := func(i int) string {
		b := []byte(c)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	v := map[string]string{
		"first byte flipped":         flip(0),
		"middle byte flipped":        flip(len(c) / 2),
		"next-to-last byte flipped":  flip(len(c) - 2),
		"last character dropped":     c[:len(c)-1],
		"four characters dropped":    c[:len(c)-4],
		"truncated to half":          c[:len(c)/2],
		"four characters appended":   c + "AAAA",
		"garbage":                    "not-a-cursor",
		"punctuation":                "!!!!",
		"zeros":                      strings.Repeat("A", 44),
		"empty":                      "",
		"8 KiB":                      strings.Repeat("A", 8192),
		"8 KiB after a valid cursor": c + strings.Repeat("A", 8192),
		"NUL":                        "\x00",
		"quotes":                     `"'`,
		"leading space":              " " + c,
		"readable JSON":              base64.RawURLEncoding.EncodeToString([]byte(`{"updatedAt":"2026-03-01T00:00:00.000Z","id":"c-000"}`)),
		"readable offset":            base64.RawURLEncoding.EncodeToString([]byte("2")),
		"bare offset":                "2",
	}
	if std := strings.NewReplacer("-", "+", "_", "/").Replace(c); std != c {
		v["standard base64 alphabet"] = std
	}
	return v
}

func testCursorTampered(t *testing.T, e *env) {
	uq := usageQuery("day", base.AddDate(0, 0, -7), base.AddDate(0, 0, 7), "userId")
	cases := []struct {
		path string
		q    url.Values
		all  bool // every variant, else a few
	}{
		{"/conversations", vals("limit", "2"), true},
		{"/conversations", vals("limit", "2", "updatedSince", timeParam(base)), false},
		{"/assistants", vals("limit", "2"), false},
		{"/events", vals("limit", "2"), true},
		{"/usage", withParams(uq, "limit", "2"), true},
	}
	few := map[string]bool{"middle byte flipped": true, "truncated to half": true, "garbage": true, "empty": true}
	for _, tc := range cases {
		c := cursorOf(t, e, full, tc.path, tc.q)
		for name, bad := range tampered(c) {
			if !tc.all && !few[name] {
				continue
			}
			q := withParams(tc.q)
			q.Set("cursor", bad)
			badCursor(t, e, full, "a cursor, "+name, tc.path, q)
		}
	}
}
