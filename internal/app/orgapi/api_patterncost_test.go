package orgapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
)

// heavyPatterns compile, but their search costs seconds of CPU per MiB of
// text: refused with a 400 that says why.
var heavyPatterns = []struct{ pattern, why string }{
	{`[a-z]{0,1000}x`, "compiles to 2003 instructions"},
	{`(?:.{0,150}){1,5}x`, "nests the repetition {0,150} inside the repetition {1,5}"},
	{strings.Repeat(`\pL{0,1000}`, 90), "compiles to about"},
	{`(?:\w{1,500}\s)+`, "nests the repetition {1,500} inside the repetition +"},
}

// Patterns of real policies stay accepted.
var realPatterns = []string{
	`\b\d{3}-\d{2}-\d{4}\b`,
	`\b(?:\d[ -]*?){13,19}\b`,
	`\b[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){2,7}\s?[A-Z0-9]{1,4}\b`,
	`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`,
	`(?i)\b(?:acquisition|merger|takeover|layoffs?|salary|bonus|diagnosis|lawsuit|settlement|confidential|embargo|insider|password|credentials?|passport)\b`,
}

func TestCreateCostlyPatternIs400(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		b := regexBody("costly")
		before := e.state()
		for _, c := range heavyPatterns {
			for _, cs := range []bool{true, false} {
				r := e.do(post, e.listPath(), withTrigger(b, jsonObj{"type": "Regex", "pattern": c.pattern, "isCaseSensitive": cs}), nil)
				requireProblem(t, r, http.StatusBadRequest, "trigger.pattern")
				p := problem(t, r)
				require.Len(t, p.Errors, 1)
				require.Contains(t, p.Errors[0].Message, c.why, "%s", r)
			}
		}
		e.requireUnchanged(before)
		for _, p := range realPatterns {
			in := e.create(withTrigger(b, jsonObj{"type": "Regex", "pattern": p, "isCaseSensitive": false}))
			require.Equal(t, p, in.Trigger.Pattern)
		}
	})
}

func TestPatchCostlyPatternIs400(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newTestEnv(t, db)
		in := e.create(regexBody("patched"))
		e.clock.Advance(time.Second)
		before := e.state()
		for _, c := range heavyPatterns {
			r := e.do(patch, e.itemPath(in.ID), jsonObj{"trigger": jsonObj{"type": "Regex", "pattern": c.pattern}}, nil)
			requireProblem(t, r, http.StatusBadRequest, "trigger.pattern")
			require.Contains(t, problem(t, r).Errors[0].Message, c.why, "%s", r)
		}
		e.requireUnchanged(before)
		r := e.do(patch, e.itemPath(in.ID), jsonObj{"trigger": jsonObj{"type": "Regex", "pattern": realPatterns[1]}}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
	})
}
