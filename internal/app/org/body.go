package org

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/spec"
)

// ParseInstructionCreate parses and checks the body of a create request: JSON,
// the instruction-create schema, an RE2 pattern that compiles within the
// limits of policy.CheckPattern, usedBy without
// repeats. It returns the body with ids in lowercase and, for Regex and
// StringMatch triggers, isCaseSensitive explicit. Every failure is an
// [*spec.Error] of kind spec.ErrInvalid naming the fields to blame. Whether the agents of
// usedBy are the organisation's is the store's to check.
func ParseInstructionCreate(body []byte) (spec.InstructionCreate, error) {
	var c spec.InstructionCreate
	if err := httpx.DecodeJSON("instruction-create", body, &c); err != nil {
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
	if err := httpx.DecodeJSON("instruction-patch", body, &p); err != nil {
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
// that span fields of the result. The read-only fields of p (id, createdAt,
// updatedAt), when sent, must equal in's: a client that edits an
// instruction it fetched sends them back unchanged, and a different value
// (another id, or the updatedAt of an older version) is an error naming the
// field. It does not touch the timestamps.
func ApplyPatch(in spec.Instruction, p spec.InstructionPatch) (spec.Instruction, error) {
	if p.ID != nil && !strings.EqualFold(*p.ID, in.ID) {
		return in, httpx.InvalidBody("id", "is read-only: this instruction's id is %s; leave it out or send it unchanged", in.ID)
	}
	if p.CreatedAt != nil && !p.CreatedAt.Equal(in.CreatedAt.Time) {
		return in, httpx.InvalidBody("createdAt", "is read-only: this instruction's createdAt is %s; leave it out or send it unchanged", in.CreatedAt)
	}
	if p.UpdatedAt != nil && !p.UpdatedAt.Equal(in.UpdatedAt.Time) {
		return in, httpx.InvalidBody("updatedAt", "is read-only: this instruction's updatedAt is %s (it changed since the value sent was read, or the value was edited); leave it out or send it unchanged", in.UpdatedAt)
	}
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
		return in, httpx.InvalidBody("allowRedaction", "is valid only with a Regex or StringMatch trigger; the instruction's trigger would be Semantic")
	}
	return out, nil
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

// checkTrigger checks a Regex trigger's pattern as the policy engine will
// run it: valid RE2 syntax and within the cost limits of policy.CheckPattern.
func checkTrigger(t spec.Trigger) error {
	if t.Type != spec.TriggerRegex {
		return nil
	}
	if err := policy.CheckPattern(t.Pattern, t.CaseSensitive()); err != nil {
		return httpx.InvalidBody("trigger.pattern", "%s", err.Error())
	}
	return nil
}

func normaliseUsedBy(ids []string) ([]string, error) {
	out := make([]string, len(ids))
	seen := make(map[string]int, len(ids))
	for i, id := range ids {
		id = strings.ToLower(id)
		if j, dup := seen[id]; dup {
			return nil, httpx.InvalidBody("usedBy", "item %d: agent %s is already listed at item %d", i, id, j)
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
		return httpx.InvalidBody("assessmentId", "must not hold control characters")
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

// describe names an agent for messages.
func describeAgent(id, name string) string { return fmt.Sprintf("%s (%s)", id, name) }
