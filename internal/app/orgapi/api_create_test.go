package orgapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// =================================================================== create

func TestCreateAnswers201WithTheFullInstruction(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		e.clock.Advance(1234567 * time.Nanosecond) // not on a millisecond
		categoryID := uuid.NewString()
		body := jsonObj{
			"agentType":      "DataProtection",
			"title":          "Block IBANs in prompts",
			"trigger":        jsonObj{"type": "Regex", "pattern": `\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}\b`, "isCaseSensitive": false},
			"action":         "Block",
			"criticality":    "High",
			"categoryId":     categoryID,
			"usedBy":         []string{e.Agents[0].ID, e.Agents[1].ID},
			"allowRedaction": true,
			"assessmentId":   "asmt-2026-014",
		}
		r := e.do(post, e.listPath(), body, nil)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r)
		m := decodeJSON[map[string]any](t, r)
		require.Equal(t, []string{"action", "agentType", "allowRedaction", "assessmentId", "categoryId", "createdAt",
			"criticality", "id", "title", "trigger", "updatedAt", "usedBy"}, keysOf(m))

		id, _ := m["id"].(string)
		parsed, err := uuid.Parse(id)
		require.NoError(t, err, "id %q", id)
		require.Equal(t, parsed.String(), id, "id is not a canonical UUID")

		created, _ := m["createdAt"].(string)
		updated, _ := m["updatedAt"].(string)
		require.NoError(t, spec.CheckTimestampMillis(created))
		require.NoError(t, spec.CheckTimestampMillis(updated))
		require.Equal(t, created, updated)
		require.Equal(t, "2026-03-02T09:14:03.121Z", created)

		require.Equal(t, "DataProtection", m["agentType"])
		require.Equal(t, "Block IBANs in prompts", m["title"])
		require.Equal(t, map[string]any{"type": "Regex", "pattern": body["trigger"].(jsonObj)["pattern"], "isCaseSensitive": false}, m["trigger"])
		require.Equal(t, "Block", m["action"])
		require.Equal(t, "High", m["criticality"])
		require.Equal(t, categoryID, m["categoryId"])
		require.Equal(t, []any{e.Agents[0].ID, e.Agents[1].ID}, m["usedBy"])
		require.Equal(t, true, m["allowRedaction"])
		require.Equal(t, "asmt-2026-014", m["assessmentId"])

		loc := r.Header.Get("Location")
		require.NotEmpty(t, loc)
		u, err := url.Parse(loc)
		require.NoError(t, err)
		require.Equal(t, e.itemPath(id), u.Path)
		g := e.do(get, u.Path, nil, nil)
		require.Equal(t, http.StatusOK, g.Status, "%s", g)
		require.JSONEq(t, string(r.Body), string(g.Body))
	})
}

func TestCreateDefaults(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		for _, body := range []jsonObj{regexBody("regex"), stringMatchBody("values", "a", "b"), semanticBody("semantic", "text")} {
			t.Run(triggerType(body), func(t *testing.T) {
				e := e.withT(t)
				r := e.do(post, e.listPath(), body, nil)
				require.Equal(t, http.StatusCreated, r.Status, "%s", r)
				m := decodeJSON[map[string]any](t, r)
				require.Equal(t, []any{}, m["usedBy"], "usedBy must be [] not null: %s", r.Body)
				require.Equal(t, false, m["allowRedaction"])
				v, ok := m["categoryId"]
				require.True(t, ok, "categoryId missing: %s", r.Body)
				require.Nil(t, v)
				v, ok = m["assessmentId"]
				require.True(t, ok, "assessmentId missing: %s", r.Body)
				require.Nil(t, v)
				tr := m["trigger"].(map[string]any)
				if tr["type"] != "Semantic" {
					require.Equal(t, true, tr["isCaseSensitive"], "isCaseSensitive defaults to true: %s", r.Body)
				}
				// GET serves the same defaults.
				require.JSONEq(t, string(r.Body), e.getRaw(m["id"].(string)))
			})
		}
		// false is kept.
		for _, body := range []jsonObj{regexBody("regex"), stringMatchBody("values", "a")} {
			t.Run(triggerType(body)+" case-insensitive", func(t *testing.T) {
				e := e.withT(t)
				body["trigger"].(jsonObj)["isCaseSensitive"] = false
				in := e.create(body)
				require.NotNil(t, in.Trigger.IsCaseSensitive)
				require.False(t, *in.Trigger.IsCaseSensitive)
				require.False(t, e.get(in.ID).Trigger.CaseSensitive())
			})
		}
	})
}

// badCreate is a create body the service must reject with status, blaming
// field ("" when no field is to blame).
type badCreate struct {
	name   string
	body   any
	status int
	field  string
}

// requireRejected sends every case to POST, each in a subtest named after
// it, and asserts its rejection, and that nothing was written.
func requireRejectedCreates(e *testEnv, cases []badCreate) {
	e.t.Helper()
	before := e.state()
	for _, c := range cases {
		e.t.Run(c.name, func(t *testing.T) {
			e := e.withT(t)
			r := e.do(post, e.listPath(), c.body, nil)
			if r.Status != c.status {
				t.Errorf("%s: got %s, want %d", c.name, r, c.status)
				return
			}
			p := problem(t, r)
			if c.field != "" && !slices.Contains(fieldsOf(p), c.field) {
				t.Errorf("%s: problem blames %v, want %q: %s", c.name, fieldsOf(p), c.field, r.Body)
			}
		})
	}
	e.requireUnchanged(before)
}

func with(body jsonObj, key string, v any) jsonObj {
	out := jsonObj{}
	for k, x := range body {
		out[k] = x
	}
	out[key] = v
	return out
}

func without(body jsonObj, key string) jsonObj {
	out := jsonObj{}
	for k, x := range body {
		if k != key {
			out[k] = x
		}
	}
	return out
}

func withTrigger(body jsonObj, trigger jsonObj) jsonObj { return with(body, "trigger", trigger) }

// triggerType returns the trigger type of a create body, to name a subtest.
func triggerType(body jsonObj) string { return body["trigger"].(jsonObj)["type"].(string) }

func TestCreateAgentTypeMustBeDataProtection(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("agent type")
		requireRejectedCreates(e, []badCreate{
			{"Other", with(b, "agentType", "Other"), 400, "agentType"},
			{"lowercase", with(b, "agentType", "dataprotection"), 400, "agentType"},
			{"empty", with(b, "agentType", ""), 400, "agentType"},
			{"number", with(b, "agentType", 1), 400, "agentType"},
			{"null", with(b, "agentType", nil), 400, "agentType"},
			{"missing", without(b, "agentType"), 400, "agentType"},
		})
		e.create(b)
	})
}

func TestCreateTitleLength(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("")
		requireRejectedCreates(e, []badCreate{
			{"empty", with(b, "title", ""), 400, "title"},
			{"201 ascii", with(b, "title", strings.Repeat("a", 201)), 400, "title"},
			{"201 é", with(b, "title", strings.Repeat("é", 201)), 400, "title"},
			{"201 emoji", with(b, "title", strings.Repeat("😀", 201)), 400, "title"},
		})
		for _, c := range []struct{ name, title string }{
			{"1 ascii", "x"},
			{"200 ascii", strings.Repeat("a", 200)},
			{"200 é", strings.Repeat("é", 200)},
			{"200 emoji", strings.Repeat("😀", 200)},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := e.withT(t)
				in := e.create(with(b, "title", c.title))
				require.Equal(t, c.title, in.Title)
				require.Equal(t, c.title, e.get(in.ID).Title)
			})
		}
	})
}

func TestCreateRequiredFields(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("required")
		var cases []badCreate
		for _, f := range []string{"agentType", "title", "trigger", "action", "criticality"} {
			cases = append(cases, badCreate{"missing " + f, without(b, f), 400, f})
		}
		cases = append(cases,
			badCreate{"missing trigger.type", withTrigger(b, jsonObj{"pattern": "x"}), 400, "trigger.type"},
			badCreate{"empty object", jsonObj{}, 400, "title"},
		)
		requireRejectedCreates(e, cases)
	})
}

func TestCreateEnumValues(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("enums")
		requireRejectedCreates(e, []badCreate{
			{"action Deny", with(b, "action", "Deny"), 400, "action"},
			{"action lowercase", with(b, "action", "block"), 400, "action"},
			{"action empty", with(b, "action", ""), 400, "action"},
			{"criticality Medium", with(b, "criticality", "Medium"), 400, "criticality"},
			{"criticality lowercase", with(b, "criticality", "high"), 400, "criticality"},
			{"trigger type Fuzzy", withTrigger(b, jsonObj{"type": "Fuzzy", "text": "x"}), 400, "trigger.type"},
			{"trigger type lowercase", withTrigger(b, jsonObj{"type": "regex", "pattern": "x"}), 400, "trigger.type"},
		})
		for _, a := range []string{"Allow", "Block"} {
			for _, c := range []string{"Low", "High"} {
				t.Run(a+" "+c, func(t *testing.T) {
					e := e.withT(t)
					in := e.create(with(with(b, "action", a), "criticality", c))
					require.Equal(t, a, in.Action)
					require.Equal(t, c, in.Criticality)
				})
			}
		}
	})
}

func TestCreateTriggerUnion(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("trigger")
		requireRejectedCreates(e, []badCreate{
			{"Semantic without text", withTrigger(b, jsonObj{"type": "Semantic"}), 400, "trigger.text"},
			{"Regex without pattern", withTrigger(b, jsonObj{"type": "Regex"}), 400, "trigger.pattern"},
			{"StringMatch without values", withTrigger(b, jsonObj{"type": "StringMatch"}), 400, "trigger.values"},
			{"Semantic with pattern", withTrigger(b, jsonObj{"type": "Semantic", "text": "x", "pattern": "x"}), 400, "trigger.pattern"},
			{"Semantic with values", withTrigger(b, jsonObj{"type": "Semantic", "text": "x", "values": []string{"x"}}), 400, "trigger.values"},
			{"Semantic with isCaseSensitive", withTrigger(b, jsonObj{"type": "Semantic", "text": "x", "isCaseSensitive": true}), 400, "trigger.isCaseSensitive"},
			{"Regex with text", withTrigger(b, jsonObj{"type": "Regex", "pattern": "x", "text": "x"}), 400, "trigger.text"},
			{"Regex with values", withTrigger(b, jsonObj{"type": "Regex", "pattern": "x", "values": []string{"x"}}), 400, "trigger.values"},
			{"StringMatch with pattern", withTrigger(b, jsonObj{"type": "StringMatch", "values": []string{"x"}, "pattern": "x"}), 400, "trigger.pattern"},
			{"StringMatch with text", withTrigger(b, jsonObj{"type": "StringMatch", "values": []string{"x"}, "text": "x"}), 400, "trigger.text"},
			{"unknown trigger field", withTrigger(b, jsonObj{"type": "Regex", "pattern": "x", "flags": "i"}), 400, "trigger.flags"},
			{"empty text", withTrigger(b, jsonObj{"type": "Semantic", "text": ""}), 400, "trigger.text"},
			{"empty pattern", withTrigger(b, jsonObj{"type": "Regex", "pattern": ""}), 400, "trigger.pattern"},
			{"empty values", withTrigger(b, jsonObj{"type": "StringMatch", "values": []string{}}), 400, "trigger.values"},
			{"empty value", withTrigger(b, jsonObj{"type": "StringMatch", "values": []string{"a", ""}}), 400, "trigger.values"},
		})
		s := e.create(withTrigger(b, jsonObj{"type": "Semantic", "text": "by meaning"}))
		require.Equal(t, spec.Trigger{Type: "Semantic", Text: "by meaning"}, s.Trigger)
		m := e.create(withTrigger(b, jsonObj{"type": "StringMatch", "values": []string{"Aurora", "Borealis"}}))
		require.Equal(t, []string{"Aurora", "Borealis"}, m.Trigger.Values)
	})
}

func TestCreateInvalidRE2PatternIs400(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("regex")
		var cases []badCreate
		for _, p := range []string{`(?=x)`, `a(b`, `(?<!x)y`, `[z-a]`, `x**`, `\1`, `a{1001}`} {
			cases = append(cases, badCreate{"pattern " + p, withTrigger(b, jsonObj{"type": "Regex", "pattern": p}), 400, "trigger.pattern"})
			cases = append(cases, badCreate{"case-insensitive pattern " + p,
				withTrigger(b, jsonObj{"type": "Regex", "pattern": p, "isCaseSensitive": false}), 400, "trigger.pattern"})
		}
		requireRejectedCreates(e, cases)
		for _, p := range []string{`\bDE\d{20}\b`, `(?i)iban`, `[[:alpha:]]+`, `\p{Greek}`} {
			t.Run("valid pattern "+p, func(t *testing.T) {
				e := e.withT(t)
				in := e.create(withTrigger(b, jsonObj{"type": "Regex", "pattern": p}))
				require.Equal(t, p, in.Trigger.Pattern)
			})
		}
	})
}

func TestCreateTriggerLimits(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("limits")
		values := func(n int, v string) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = fmt.Sprintf("%s%04d", v, i)
			}
			return out
		}
		requireRejectedCreates(e, []badCreate{
			{"pattern 1001", withTrigger(b, jsonObj{"type": "Regex", "pattern": strings.Repeat("a", 1001)}), 400, "trigger.pattern"},
			{"pattern 1001 é", withTrigger(b, jsonObj{"type": "Regex", "pattern": strings.Repeat("é", 1001)}), 400, "trigger.pattern"},
			{"text 2001", withTrigger(b, jsonObj{"type": "Semantic", "text": strings.Repeat("t", 2001)}), 400, "trigger.text"},
			{"text 2001 é", withTrigger(b, jsonObj{"type": "Semantic", "text": strings.Repeat("é", 2001)}), 400, "trigger.text"},
			{"values 1001", withTrigger(b, jsonObj{"type": "StringMatch", "values": values(1001, "v")}), 400, "trigger.values"},
			{"value 201", withTrigger(b, jsonObj{"type": "StringMatch", "values": []string{"ok", strings.Repeat("v", 201)}}), 400, "trigger.values"},
			{"value 201 é", withTrigger(b, jsonObj{"type": "StringMatch", "values": []string{strings.Repeat("é", 201)}}), 400, "trigger.values"},
		})
		ok := []struct {
			name string
			tr   jsonObj
		}{
			{"pattern 1000", jsonObj{"type": "Regex", "pattern": strings.Repeat("a", 1000)}},
			{"pattern 1000 é", jsonObj{"type": "Regex", "pattern": strings.Repeat("é", 1000)}},
			{"text 2000", jsonObj{"type": "Semantic", "text": strings.Repeat("t", 2000)}},
			{"text 2000 é", jsonObj{"type": "Semantic", "text": strings.Repeat("é", 2000)}},
			{"values 1000", jsonObj{"type": "StringMatch", "values": values(1000, "v")}},
			{"values 200", jsonObj{"type": "StringMatch", "values": []string{strings.Repeat("v", 200), strings.Repeat("é", 200)}}},
		}
		for i, c := range ok {
			t.Run(c.name, func(t *testing.T) {
				e, tr := e.withT(t), c.tr
				r := e.do(post, e.listPath(), withTrigger(b, tr), nil)
				require.Equal(t, http.StatusCreated, r.Status, "trigger %d: %s", i, r)
				in := decodeJSON[spec.Instruction](t, r)
				got := e.get(in.ID)
				require.Equal(t, in, got)
				switch tr["type"] {
				case "Regex":
					require.Equal(t, tr["pattern"], got.Trigger.Pattern)
				case "Semantic":
					require.Equal(t, tr["text"], got.Trigger.Text)
				case "StringMatch":
					require.Equal(t, tr["values"], got.Trigger.Values)
				}
			})
		}
	})
}

// randomText returns n random CJK characters (three bytes each in UTF-8),
// text that does not compress.
func randomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteRune(rune(0x4E00 + rng.IntN(0x5000)))
	}
	return b.String()
}

// Instructions at every limit at once, with text that does not compress, are
// stored, served and found by search like any other.
func TestCreateAtTheLimitsWithIncompressibleText(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		rng := rand.New(rand.NewPCG(7, 7))
		values := make([]string, spec.MaxStringMatchValues)
		for i := range values {
			values[i] = randomText(rng, spec.MaxStringMatchValue)
		}
		for _, tr := range []jsonObj{
			{"type": "StringMatch", "values": values},
			{"type": "Semantic", "text": randomText(rng, spec.MaxSemanticTextLength)},
			{"type": "Regex", "pattern": randomText(rng, spec.MaxPatternLength)},
		} {
			t.Run(tr["type"].(string), func(t *testing.T) {
				e := e.withT(t)
				title := randomText(rng, spec.MaxTitleLength)
				r := e.do(post, e.listPath(), withTrigger(regexBody(title), tr), nil)
				require.Equal(t, http.StatusCreated, r.Status, "%s trigger: %.300s", tr["type"], r)
				in := decodeJSON[spec.Instruction](t, r)
				require.Equal(t, title, in.Title)
				require.Equal(t, in, e.get(in.ID))
				needle := []rune(title)[50:60]
				l := e.list(url.Values{"search": {string(needle)}}.Encode())
				require.Equal(t, []string{in.ID}, ids(l.Items))
			})
		}
		needle := []rune(values[999])[100:110]
		l := e.list(url.Values{"search": {string(needle)}}.Encode())
		require.Len(t, l.Items, 1)
		require.Equal(t, "StringMatch", l.Items[0].Trigger.Type)
	})
}

func TestCreateAllowRedactionOnlyWithRegexOrStringMatch(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		requireRejectedCreates(e, []badCreate{
			{"Semantic with allowRedaction", with(semanticBody("s", "text"), "allowRedaction", true), 400, "allowRedaction"},
			{"allowRedaction not a boolean", with(regexBody("r"), "allowRedaction", "true"), 400, "allowRedaction"},
		})
		for _, b := range []jsonObj{regexBody("r"), stringMatchBody("m", "x")} {
			t.Run(triggerType(b)+" with allowRedaction", func(t *testing.T) {
				e := e.withT(t)
				in := e.create(with(b, "allowRedaction", true))
				require.True(t, in.AllowRedaction)
				require.True(t, e.get(in.ID).AllowRedaction)
			})
		}
		in := e.create(with(semanticBody("s", "text"), "allowRedaction", false))
		require.False(t, in.AllowRedaction)
	})
}

func TestCreateCategoryID(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("category")
		requireRejectedCreates(e, []badCreate{
			{"not a uuid", with(b, "categoryId", "pii"), 400, "categoryId"},
			{"uuid without hyphens", with(b, "categoryId", strings.ReplaceAll(uuid.NewString(), "-", "")), 400, "categoryId"},
			{"number", with(b, "categoryId", 7), 400, "categoryId"},
			{"empty", with(b, "categoryId", ""), 400, "categoryId"},
		})
		cat := uuid.NewString()
		in := e.create(with(b, "categoryId", cat))
		require.NotNil(t, in.CategoryID)
		require.Equal(t, cat, *in.CategoryID)
		in = e.create(with(b, "categoryId", nil))
		require.Nil(t, in.CategoryID)
	})
}

func TestCreateUsedByValidation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("usedBy")
		a0 := e.Agents[0].ID
		requireRejectedCreates(e, []badCreate{
			{"not a uuid", with(b, "usedBy", []string{"agent-1"}), 400, "usedBy"},
			{"one not a uuid", with(b, "usedBy", []string{a0, "agent-1"}), 400, "usedBy"},
			{"repeated", with(b, "usedBy", []string{a0, a0}), 400, "usedBy"},
			{"repeated in another case", with(b, "usedBy", []string{a0, strings.ToUpper(a0)}), 400, "usedBy"},
			{"unknown agent", with(b, "usedBy", []string{uuid.NewString()}), 400, "usedBy"},
			{"known and unknown", with(b, "usedBy", []string{a0, uuid.NewString()}), 400, "usedBy"},
			{"string", with(b, "usedBy", "x"), 400, "usedBy"},
			{"array of numbers", with(b, "usedBy", []int{1}), 400, "usedBy"},
		})
	})
}

func TestCreateUnknownFieldIsNamed(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("unknown")
		requireRejectedCreates(e, []badCreate{
			{"foo", with(b, "foo", 1), 400, "foo"},
			{"wrong case", with(b, "Title", "x"), 400, "Title"},
			{"id", with(b, "id", uuid.NewString()), 400, "id"},
			{"createdAt", with(b, "createdAt", "2026-03-02T09:14:03.120Z"), 400, "createdAt"},
			{"updatedAt", with(b, "updatedAt", "2026-03-02T09:14:03.120Z"), 400, "updatedAt"},
			{"organisationId", with(b, "organisationId", uuid.NewString()), 400, "organisationId"},
		})
	})
}

func TestCreateWrongTypesAreNamed(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("types")
		requireRejectedCreates(e, []badCreate{
			{"title number", with(b, "title", 5), 400, "title"},
			{"title null", with(b, "title", nil), 400, "title"},
			{"usedBy string", with(b, "usedBy", "x"), 400, "usedBy"},
			{"usedBy object", with(b, "usedBy", jsonObj{}), 400, "usedBy"},
			{"trigger array", with(b, "trigger", []any{}), 400, "trigger"},
			{"trigger string", with(b, "trigger", "Regex"), 400, "trigger"},
			{"trigger null", with(b, "trigger", nil), 400, "trigger"},
			{"action number", with(b, "action", 1), 400, "action"},
			{"criticality bool", with(b, "criticality", true), 400, "criticality"},
			{"allowRedaction string", with(b, "allowRedaction", "yes"), 400, "allowRedaction"},
			{"assessmentId number", with(b, "assessmentId", 5), 400, "assessmentId"},
			{"pattern number", withTrigger(b, jsonObj{"type": "Regex", "pattern": 5}), 400, "trigger.pattern"},
			{"values string", withTrigger(b, jsonObj{"type": "StringMatch", "values": "x"}), 400, "trigger.values"},
			{"isCaseSensitive string", withTrigger(b, jsonObj{"type": "Regex", "pattern": "x", "isCaseSensitive": "no"}), 400, "trigger.isCaseSensitive"},
		})
	})
}

func TestCreateIsNotDeduplicated(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := with(regexBody("twice"), "usedBy", []string{e.Agents[0].ID})
		first := e.create(b)
		second := e.create(b)
		require.NotEqual(t, first.ID, second.ID)
		second.ID = first.ID
		require.Equal(t, first, second, "the two creates differ beyond their ids")
		l := e.list("")
		require.Equal(t, 2, l.TotalCount)
		require.Equal(t, 2, e.counts()[e.Agents[0].ID])
	})
}

func TestCreateUsedByAssignsTheAgents(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		a0, a1, a2 := e.Agents[0].ID, e.Agents[1].ID, e.Agents[2].ID
		require.Equal(t, map[string]int{a0: 0, a1: 0, a2: 0}, e.counts())
		in := e.create(with(regexBody("assigned"), "usedBy", []string{a0, a1}))
		require.ElementsMatch(t, []string{a0, a1}, in.UsedBy)
		require.Equal(t, map[string]int{a0: 1, a1: 1, a2: 0}, e.counts())
		require.Equal(t, []string{in.ID}, ids(e.list("agentId="+a0).Items))
		require.Equal(t, []string{in.ID}, ids(e.list("agentId="+a1).Items))
		require.Empty(t, e.list("agentId="+a2).Items)

		// An agent id in uppercase names the same agent.
		up := e.create(with(regexBody("uppercase"), "usedBy", []string{strings.ToUpper(a2)}))
		require.Len(t, up.UsedBy, 1)
		require.Equal(t, map[string]int{a0: 1, a1: 1, a2: 1}, e.counts())
		require.Equal(t, []string{up.ID}, ids(e.list("agentId="+a2).Items))
	})
}

// ================================================================ bad input

func TestBadBodiesAreRejectedWithoutWriting(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		target := e.create(with(regexBody("target"), "usedBy", []string{e.Agents[0].ID}))
		validCreate, err := json.Marshal(regexBody("TITLE"))
		require.NoError(t, err)
		validPatch := []byte(`{"title":"TITLE"}`)
		pad := func(b []byte, n int) []byte { // b padded with trailing spaces to n bytes
			return append(bytes.Clone(b), bytes.Repeat([]byte(" "), n-len(b))...)
		}
		type bad struct {
			name   string
			body   func(valid []byte) any
			h      hdr
			status int
			field  string
		}
		cases := []bad{
			{"malformed", func([]byte) any { return `{"title":` }, nil, 400, ""},
			{"malformed quote", func([]byte) any { return `{'title':'x'}` }, nil, 400, ""},
			{"trailing object", func([]byte) any { return `{} {}` }, nil, 400, ""},
			{"valid then trailing object", func(v []byte) any { return string(v) + ` {}` }, nil, 400, ""},
			{"valid then garbage", func(v []byte) any { return string(v) + `x` }, nil, 400, ""},
			{"empty", func([]byte) any { return "" }, nil, 400, ""},
			{"whitespace", func([]byte) any { return " \n\t" }, nil, 400, ""},
			{"array", func([]byte) any { return `[]` }, nil, 400, ""},
			{"array of the valid object", func(v []byte) any { return "[" + string(v) + "]" }, nil, 400, ""},
			{"string", func([]byte) any { return `"x"` }, nil, 400, ""},
			{"number", func([]byte) any { return `1` }, nil, 400, ""},
			{"null", func([]byte) any { return `null` }, nil, 400, ""},
			{"invalid UTF-8", func(v []byte) any { return bytes.Replace(v, []byte("TITLE"), []byte("ab\xff\xfecd"), 1) }, nil, 400, ""},
			{"text/plain", func(v []byte) any { return v }, hdr{"Content-Type": "text/plain"}, 400, "Content-Type"},
			{"form", func(v []byte) any { return v }, hdr{"Content-Type": "application/x-www-form-urlencoded"}, 400, "Content-Type"},
			{"no Content-Type", func(v []byte) any { return v }, hdr{"Content-Type": ""}, 400, "Content-Type"},
			{"over 1 MiB by one byte", func(v []byte) any { return pad(v, httpx.MaxBodyBytes+1) }, nil, 413, ""},
			{"2 MiB", func(v []byte) any { return pad(v, 2*httpx.MaxBodyBytes) }, nil, 413, ""},
		}
		before := e.state()
		item := e.getRaw(target.ID)
		for _, ep := range []struct {
			method, path string
			valid        []byte
		}{{post, e.listPath(), validCreate}, {patch, e.itemPath(target.ID), validPatch}} {
			t.Run(ep.method, func(t *testing.T) {
				for _, c := range cases {
					t.Run(c.name, func(t *testing.T) {
						e := e.withT(t)
						r := e.do(ep.method, ep.path, c.body(ep.valid), c.h)
						if r.Status != c.status {
							t.Errorf("%s %s: got %s, want %d", ep.method, c.name, r, c.status)
							return
						}
						p := problem(t, r)
						if c.field != "" {
							require.Contains(t, fieldsOf(p), c.field, "%s %s: %s", ep.method, c.name, r)
						}
					})
				}
			})
		}
		e.requireUnchanged(before)
		require.JSONEq(t, item, e.getRaw(target.ID))

		// A charset parameter is fine, and a body of exactly 1 MiB is not too large.
		r := e.do(post, e.listPath(), validCreate, hdr{"Content-Type": "application/json; charset=utf-8"})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r)
		r = e.do(post, e.listPath(), pad(validCreate, httpx.MaxBodyBytes), nil)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r)
		r = e.do(patch, e.itemPath(target.ID), pad(validPatch, httpx.MaxBodyBytes), nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
	})
}

// ============================================================ assessmentId

func TestAssessmentIDIsUniquePerOrganisation(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		bt := e.newTenant("Beta", 1, "beta-key")
		b := e.withT(t)
		b.tenant = bt

		first := e.create(with(regexBody("first"), "assessmentId", "asmt-1"))
		require.NotNil(t, first.AssessmentID)
		require.Equal(t, "asmt-1", *first.AssessmentID)

		before := e.state()
		r := e.do(post, e.listPath(), with(with(regexBody("second"), "assessmentId", "asmt-1"), "usedBy", []string{e.Agents[0].ID}), nil)
		requireProblem(t, r, http.StatusConflict, "assessmentId")
		e.requireUnchanged(before)

		// Another organisation may use it.
		other := b.create(with(regexBody("in B"), "assessmentId", "asmt-1"))
		require.Equal(t, "asmt-1", *other.AssessmentID)

		// PATCH to a used assessmentId: 409 and nothing changes.
		second := e.create(with(regexBody("second"), "assessmentId", "asmt-2"))
		third := e.create(regexBody("third"))
		before = e.state()
		for _, id := range []string{second.ID, third.ID} {
			r = e.do(patch, e.itemPath(id), jsonObj{"assessmentId": "asmt-1", "title": "taken"}, nil)
			requireProblem(t, r, http.StatusConflict, "assessmentId")
		}
		e.requireUnchanged(before)

		// Setting its own assessmentId again is no conflict.
		r = e.do(patch, e.itemPath(first.ID), jsonObj{"assessmentId": "asmt-1"}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)

		// null clears it; then it can be used again.
		r = e.do(patch, e.itemPath(first.ID), jsonObj{"assessmentId": nil}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		require.Nil(t, decodeJSON[spec.Instruction](t, r).AssessmentID)
		require.Nil(t, e.get(first.ID).AssessmentID)
		r = e.do(patch, e.itemPath(third.ID), jsonObj{"assessmentId": "asmt-1"}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		require.Equal(t, "asmt-1", *e.get(third.ID).AssessmentID)
		// And once it is free again, a create may take it.
		r = e.do(patch, e.itemPath(third.ID), jsonObj{"assessmentId": nil}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		e.create(with(regexBody("reuse"), "assessmentId", "asmt-1"))
	})
}
