package orgapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aiusage/kit/spec"
)

// MaxBodyBytes is the largest request body accepted: 1 MiB.
const MaxBodyBytes = 1 << 20

// ParseInstructionCreate parses and checks the body of a create request: JSON,
// the instruction-create schema, an RE2 pattern that compiles, usedBy without
// repeats. It returns the body with ids in lowercase and, for Regex and
// StringMatch triggers, isCaseSensitive explicit. Every failure is an
// [*Error] of kind spec.ErrInvalid naming the fields to blame. Whether the agents of
// usedBy are the organisation's is the store's to check.
func ParseInstructionCreate(body []byte) (spec.InstructionCreate, error) {
	var c spec.InstructionCreate
	if err := parseBody("instruction-create", body, &c); err != nil {
		return c, err
	}
	c.Trigger = normaliseTrigger(c.Trigger)
	if err := checkTrigger(c.Trigger); err != nil {
		return c, err
	}
	c.CategoryID = lowerPtr(c.CategoryID)
	if err := checkAssessmentID(c.AssessmentID); err != nil {
		return c, err
	}
	var err error
	if c.UsedBy, err = normaliseUsedBy(c.UsedBy); err != nil {
		return c, err
	}
	return c, nil
}

// ParseInstructionPatch parses and checks the body of a PATCH request like
// [ParseInstructionCreate]. Rules that involve the stored instruction
// (allowRedaction against the resulting trigger) are checked by
// [ApplyPatch].
func ParseInstructionPatch(body []byte) (spec.InstructionPatch, error) {
	var p spec.InstructionPatch
	if err := parseBody("instruction-patch", body, &p); err != nil {
		return p, err
	}
	if p.Trigger != nil {
		t := normaliseTrigger(*p.Trigger)
		if err := checkTrigger(t); err != nil {
			return p, err
		}
		p.Trigger = &t
	}
	if err := checkAssessmentID(p.AssessmentID.Ptr()); p.AssessmentID.Set && err != nil {
		return p, err
	}
	if p.CategoryID.Set && !p.CategoryID.Null {
		p.CategoryID.Value = strings.ToLower(p.CategoryID.Value)
	}
	if p.UsedBy != nil {
		u, err := normaliseUsedBy(*p.UsedBy)
		if err != nil {
			return p, err
		}
		p.UsedBy = &u
	}
	return p, nil
}

// ApplyPatch returns in with the fields of p applied, and checks the rules
// that span fields of the result. It does not touch the timestamps.
func ApplyPatch(in spec.Instruction, p spec.InstructionPatch) (spec.Instruction, error) {
	out := in
	out.UsedBy = slices.Clone(in.UsedBy)
	if p.AgentType != nil {
		out.AgentType = *p.AgentType
	}
	if p.Title != nil {
		out.Title = *p.Title
	}
	if p.Trigger != nil {
		out.Trigger = *p.Trigger
	}
	if p.Action != nil {
		out.Action = *p.Action
	}
	if p.Criticality != nil {
		out.Criticality = *p.Criticality
	}
	if p.CategoryID.Set {
		out.CategoryID = p.CategoryID.Ptr()
	}
	if p.UsedBy != nil {
		out.UsedBy = slices.Clone(*p.UsedBy)
	}
	if p.AllowRedaction != nil {
		out.AllowRedaction = *p.AllowRedaction
	}
	if p.AssessmentID.Set {
		out.AssessmentID = p.AssessmentID.Ptr()
	}
	if out.AllowRedaction && out.Trigger.Type == spec.TriggerSemantic {
		return in, invalidBody("allowRedaction", "is valid only with a Regex or StringMatch trigger; the instruction's trigger would be Semantic")
	}
	return out, nil
}

// parseBody checks that body is one JSON value, valid against schema, and
// decodes it into v.
func parseBody(schema string, body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return invalidBody("body", "is empty; send a JSON object")
	}
	if !utf8.Valid(body) {
		return invalidBody("body", "is not valid UTF-8")
	}
	if err := checkSingleJSON(body); err != nil {
		return err
	}
	findings, err := spec.Validate(schema, body)
	if err != nil {
		return invalidBody("body", "is not valid JSON")
	}
	if !spec.Valid(findings) {
		e := &Error{Kind: spec.ErrInvalid, Detail: detailBody}
		for _, f := range findings {
			if f.Level != spec.LevelError {
				continue
			}
			field, where := fieldOf(f.Pointer)
			msg := f.Message
			if where != "" {
				msg = where + ": " + msg
			}
			e.Fields = append(e.Fields, spec.ProblemField{Field: field, Message: msg})
		}
		return e
	}
	if err := json.Unmarshal(body, v); err != nil {
		// The schema accepted the body, so this is a value the Go types
		// cannot hold; name the field where encoding/json can.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return invalidBody(te.Field, "has the wrong type")
		}
		return invalidBody("body", "cannot be read: %v", err)
	}
	return nil
}

// checkSingleJSON reports a body that is not exactly one JSON value, with the
// offset of the first error.
func checkSingleJSON(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return invalidBody("body", "is not valid JSON: %v (at byte %d)", se, se.Offset)
		}
		return invalidBody("body", "is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalidBody("body", "has data after the JSON value (at byte %d)", dec.InputOffset())
	}
	return nil
}

// fieldOf turns a JSON pointer into the dotted name of the field
// ("/trigger/pattern" -> "trigger.pattern") and the array positions on the
// way ("/usedBy/2" -> "usedBy", "item 2").
func fieldOf(ptr string) (field, where string) {
	if ptr == "" {
		return "body", ""
	}
	var names, idx []string
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if tok == "" {
			tok = `""` // a property with an empty name
		}
		if _, err := strconv.Atoi(tok); err == nil && len(names) > 0 {
			idx = append(idx, tok)
			continue
		}
		names = append(names, tok)
	}
	if len(idx) > 0 {
		where = "item " + strings.Join(idx, ", ")
	}
	return strings.Join(names, "."), where
}

// normaliseTrigger makes isCaseSensitive explicit where it applies.
func normaliseTrigger(t spec.Trigger) spec.Trigger {
	switch t.Type {
	case spec.TriggerRegex, spec.TriggerStringMatch:
		cs := t.CaseSensitive()
		t.IsCaseSensitive = &cs
	}
	return t
}

// checkTrigger compiles a Regex trigger's pattern as the policy engine will.
func checkTrigger(t spec.Trigger) error {
	if t.Type != spec.TriggerRegex {
		return nil
	}
	p := t.Pattern
	if !t.CaseSensitive() {
		p = "(?i)" + p
	}
	if _, err := regexp.Compile(p); err != nil {
		msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
		return invalidBody("trigger.pattern", "invalid RE2 syntax: %s", msg)
	}
	return nil
}

func normaliseUsedBy(ids []string) ([]string, error) {
	out := make([]string, len(ids))
	seen := make(map[string]int, len(ids))
	for i, id := range ids {
		id = strings.ToLower(id)
		if j, dup := seen[id]; dup {
			return nil, invalidBody("usedBy", "item %d: agent %s is already listed at item %d", i, id, j)
		}
		seen[id] = i
		out[i] = id
	}
	return out, nil
}

// checkAssessmentID refuses control characters in an assessment id: it is
// an identifier, and PostgreSQL text cannot hold NUL.
func checkAssessmentID(id *string) error {
	if id != nil && strings.IndexFunc(*id, unicode.IsControl) >= 0 {
		return invalidBody("assessmentId", "must not hold control characters")
	}
	return nil
}

func lowerPtr(s *string) *string {
	if s == nil {
		return nil
	}
	v := strings.ToLower(*s)
	return &v
}

// canonicalUUID returns s in lowercase when it is a UUID in the hyphenated
// 8-4-4-4-12 form, and false otherwise.
func canonicalUUID(s string) (string, bool) {
	if len(s) != 36 {
		return "", false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", false
			}
			continue
		}
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return "", false
		}
	}
	return strings.ToLower(s), true
}

// describe names an agent for messages.
func describeAgent(id, name string) string { return fmt.Sprintf("%s (%s)", id, name) }

// DecodeJSON checks that body is exactly one JSON value of valid UTF-8 that
// the spec schema accepts, and decodes it into v. A failure is an [*Error] of
// kind spec.ErrInvalid naming every field to blame (dotted: "request.messages").
// The review-task API shares it.
func DecodeJSON(schema string, body []byte, v any) error { return parseBody(schema, body, v) }

// CanonicalUUID returns s in lowercase when it is a UUID in the hyphenated
// 8-4-4-4-12 form (any case), and false otherwise.
func CanonicalUUID(s string) (string, bool) { return canonicalUUID(s) }
