package orgapi

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/spec"
)

// checkQueryError asserts that a parse failure is a 400 naming a parameter.
func checkQueryError(t *testing.T, err error) {
	t.Helper()
	var e *spec.Error
	if !errors.As(err, &e) || !errors.Is(err, spec.ErrInvalid) {
		t.Fatalf("error %v (%T) is not an *spec.Error of kind spec.ErrInvalid", err, err)
	}
	if len(e.Fields) == 0 || e.Fields[0].Field == "" || e.Fields[0].Message == "" {
		t.Fatalf("error %v names no field", err)
	}
	if spec.StatusOf(err) != 400 {
		t.Fatalf("status %d, want 400", spec.StatusOf(err))
	}
}

func FuzzParseInstructionQuery(f *testing.F) {
	for _, q := range []string{"", "page=2&pageSize=100", "search=%25_x&triggerType=Regex&action=Block&agentType=DataProtection&agentId=5A1D7E90-2B3C-4F6E-8D1A-9C0B7E6F5A42",
		"page=0", "pageSize=101", "page=99999999999999999999", "page=1&page=2", "search=%ff", "agentId=nope", "triggerType=regex", "%zz", ";"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := ParseInstructionQuery(raw)
		if err != nil {
			checkQueryError(t, err)
			return
		}
		if q.Page < 1 || q.PageSize < 1 || q.PageSize > org.MaxPageSize || utf8.RuneCountInString(q.Search) > org.MaxSearchLength {
			t.Fatalf("accepted %q as %+v", raw, q)
		}
		if q.AgentID != "" {
			if id, ok := ident.CanonicalUUID(q.AgentID); !ok || id != q.AgentID {
				t.Fatalf("accepted agentId %q", q.AgentID)
			}
		}
	})
}
