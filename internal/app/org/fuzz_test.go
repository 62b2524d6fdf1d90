package org

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/internal/infra/reqcheck"
	"github.com/aiusage/kit/spec"
)

var fuzzBodies = []string{
	`{"agentType":"DataProtection","title":"IBAN","trigger":{"type":"Regex","pattern":"\\bDE\\d{20}\\b","isCaseSensitive":false},"action":"Block","criticality":"Low","allowRedaction":true,"usedBy":["5A1D7E90-2B3C-4F6E-8D1A-9C0B7E6F5A42"]}`,
	`{"agentType":"DataProtection","title":"M&A","trigger":{"type":"Semantic","text":"unannounced merger"},"action":"Block","criticality":"High","categoryId":"7c9e6679-7425-40de-944b-e07fc1f90ae7","assessmentId":"asmt-1"}`,
	`{"agentType":"DataProtection","title":"names","trigger":{"type":"StringMatch","values":["Aurora","Borealis"]},"action":"Allow","criticality":"Low","usedBy":[]}`,
	`{"agentType":"DataProtection","title":"x","trigger":{"type":"Semantic","text":"x"},"action":"Block","criticality":"Low","allowRedaction":true}`,
	`{"agentType":"Other","title":"","trigger":{"type":"Regex","pattern":"a(b"},"action":"Maybe","criticality":"Mid","usedBy":["x","x"],"extra":1}`,
	`{"usedBy":["5a1d7e90-2b3c-4f6e-8d1a-9c0b7e6f5a42","5A1D7E90-2B3C-4F6E-8D1A-9C0B7E6F5A42"]}`,
	`{"categoryId":null,"assessmentId":null,"title":null}`,
	`{"trigger":{"type":"Regex","pattern":"(?i)x{1000}{1000}"}}`,
	`{} {}`, `[]`, `"x"`, `null`, ``, "{\"title\":\"\xff\"}", `{"title":"a","title":"b"}`, `{"a":[[[[[[[[[[[[]]]]]]]]]]]]}`,
}

// checkParseError asserts that a validation failure is a 400 naming a field.
func checkParseError(t *testing.T, err error) {
	t.Helper()
	var e *spec.Error
	if !errors.As(err, &e) || !errors.Is(err, spec.ErrInvalid) {
		t.Fatalf("error %v (%T) is not a *spec.Error of kind spec.ErrInvalid", err, err)
	}
	if len(e.Fields) == 0 || e.Fields[0].Field == "" || e.Fields[0].Message == "" {
		t.Fatalf("error %v names no field", err)
	}
	if spec.StatusOf(err) != 400 {
		t.Fatalf("status %d, want 400", spec.StatusOf(err))
	}
}

// checkTriggerInvariants asserts what every accepted trigger satisfies.
func checkTriggerInvariants(t *testing.T, tr spec.Trigger) {
	t.Helper()
	switch tr.Type {
	case spec.TriggerSemantic:
		if n := utf8.RuneCountInString(tr.Text); n < 1 || n > spec.MaxSemanticTextLength || tr.Pattern != "" || tr.Values != nil {
			t.Fatalf("accepted semantic trigger %+v", tr)
		}
	case spec.TriggerRegex:
		if tr.IsCaseSensitive == nil || tr.Text != "" || tr.Values != nil {
			t.Fatalf("accepted regex trigger %+v", tr)
		}
		if _, err := regexp.Compile(tr.Pattern); err != nil {
			t.Fatalf("accepted pattern %q that does not compile: %v", tr.Pattern, err)
		}
	case spec.TriggerStringMatch:
		if tr.IsCaseSensitive == nil || len(tr.Values) < 1 || len(tr.Values) > spec.MaxStringMatchValues {
			t.Fatalf("accepted values trigger %+v", tr)
		}
		for _, v := range tr.Values {
			if n := utf8.RuneCountInString(v); n < 1 || n > spec.MaxStringMatchValue {
				t.Fatalf("accepted value %q", v)
			}
		}
	default:
		t.Fatalf("accepted trigger type %q", tr.Type)
	}
}

func checkUsedBy(t *testing.T, ids []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, id := range ids {
		if c, ok := ident.CanonicalUUID(id); !ok || c != id || seen[id] {
			t.Fatalf("accepted usedBy %q", ids)
		}
		seen[id] = true
	}
}

// parseCreate is what the organisation API does with a body: decode it
// after the schema check, then Validate.
func parseCreate(body []byte) (InstructionCreate, error) {
	var c InstructionCreate
	if err := reqcheck.JSON("instruction-create", body); err != nil {
		return c, err
	}
	if err := json.Unmarshal(body, &c); err != nil {
		return c, reqcheck.Invalid("body", "cannot be read: %v", err)
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c.normalised(), nil
}

func FuzzInstructionCreate(f *testing.F) {
	for _, b := range fuzzBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			return
		}
		c, err := parseCreate(body)
		if err != nil {
			checkParseError(t, err)
			return
		}
		if c.AgentType != spec.AgentTypeDataProtection ||
			utf8.RuneCountInString(c.Title) < 1 || utf8.RuneCountInString(c.Title) > spec.MaxTitleLength ||
			(c.Action != spec.ActionAllow && c.Action != spec.ActionBlock) ||
			(c.Criticality != spec.CriticalityLow && c.Criticality != spec.CriticalityHigh) ||
			(c.AllowRedaction && c.Trigger.Type == spec.TriggerSemantic) {
			t.Fatalf("accepted %s as %+v", body, c)
		}
		checkTriggerInvariants(t, c.Trigger)
		checkUsedBy(t, c.UsedBy)
		if c.AssessmentID != nil && strings.IndexFunc(*c.AssessmentID, unicode.IsControl) >= 0 {
			t.Fatalf("accepted assessmentId %q", *c.AssessmentID)
		}
		if c.CategoryID != nil {
			if id, ok := ident.CanonicalUUID(*c.CategoryID); !ok || id != *c.CategoryID {
				t.Fatalf("accepted categoryId %q", *c.CategoryID)
			}
		}
		// What was accepted, written back, is accepted as the same.
		again, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := parseCreate(again)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", again, err)
		}
		if b2, _ := json.Marshal(c2); string(b2) != string(again) {
			t.Fatalf("round trip changed %s to %s", again, b2)
		}
	})
}

func FuzzInstructionPatch(f *testing.F) {
	for _, b := range fuzzBodies {
		f.Add([]byte(b))
	}
	base := spec.Instruction{ID: "9e8d7c6b-5a49-4382-b716-0f1e2d3c4b5a", AgentType: spec.AgentTypeDataProtection,
		Title: "t", Trigger: spec.RegexTrigger("x", true), Action: spec.ActionBlock, Criticality: spec.CriticalityLow,
		UsedBy: []string{}, AllowRedaction: true}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) || reqcheck.JSON("instruction-patch", body) != nil {
			return
		}
		var p InstructionPatch
		if err := json.Unmarshal(body, &p); err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			checkParseError(t, err)
			return
		}
		p = p.normalised()
		if p.Trigger != nil {
			checkTriggerInvariants(t, *p.Trigger)
		}
		if p.UsedBy != nil {
			checkUsedBy(t, *p.UsedBy)
		}
		out, err := ApplyPatch(base, p)
		if err != nil {
			checkParseError(t, err)
			if base.Title != "t" || len(base.UsedBy) != 0 {
				t.Fatal("ApplyPatch changed its input")
			}
			return
		}
		if out.AllowRedaction && out.Trigger.Type == spec.TriggerSemantic {
			t.Fatalf("patch %s gave allowRedaction with a Semantic trigger", body)
		}
		if out.ID != base.ID || out.CreatedAt != base.CreatedAt {
			t.Fatalf("patch %s changed id or createdAt", body)
		}
	})
}

func TestSecret(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		s := newSecret()
		if len(s) != 50 || s[:4] != SecretPrefix || seen[s] {
			t.Fatalf("secret %q", s)
		}
		for _, c := range s[4:] {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
				t.Fatalf("secret %q holds %q", s, c)
			}
		}
		seen[s] = true
	}
}
