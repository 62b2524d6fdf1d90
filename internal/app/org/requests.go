package org

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/aiusage/kit/internal/infra/reqcheck"
	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/spec"
)

// Validate checks what an organisation is created with: a name
// ([MaxNameLength] characters at most, no control characters), a plan (empty
// means PlanStandard) and an hourly limit that only the enterprise plan has,
// of at least 1. A failure wraps spec.ErrInvalid.
func (n OrganisationCreate) Validate() error {
	if err := checkName("organisation", n.Name); err != nil {
		return err
	}
	plan := n.Plan
	if plan == "" {
		plan = PlanStandard
	}
	if _, err := ParsePlan(string(plan)); err != nil {
		return fmt.Errorf("%w: %v", spec.ErrInvalid, err)
	}
	switch {
	case plan == PlanEnterprise && n.HourlyLimit < 1:
		return fmt.Errorf("%w: the enterprise plan needs an hourly limit of at least 1", spec.ErrInvalid)
	case plan != PlanEnterprise && n.HourlyLimit != 0:
		return fmt.Errorf("%w: an hourly limit is configured only for the enterprise plan; the %s plan's is fixed", spec.ErrInvalid, plan)
	}
	return nil
}

// Validate checks what a key is created with: a name, a type (empty means
// KeyTypeIngestion) and an expiry or none, not both. Whether the expiry is in
// the future is checked by [Store.CreateKey], at the store's clock. A failure
// wraps spec.ErrInvalid.
func (n KeyCreate) Validate() error {
	if err := checkName("key", n.Name); err != nil {
		return err
	}
	if n.Type != "" {
		if _, err := ParseKeyType(string(n.Type)); err != nil {
			return fmt.Errorf("%w: %v", spec.ErrInvalid, err)
		}
	}
	if n.NoExpiry && n.ExpiresAt != nil {
		return fmt.Errorf("%w: a key has an expiry or none, not both", spec.ErrInvalid)
	}
	return nil
}

// checkExpiry checks that a key's expiry is after now.
func checkExpiry(expires time.Time, now time.Time) error {
	if !expires.After(now) {
		return fmt.Errorf("%w: the expiry %s is not in the future", spec.ErrInvalid, expires.UTC().Format(time.RFC3339))
	}
	return nil
}

// InstructionCreate is a request to create an instruction: the body of POST
// /organisations/{id}/instructions.
type InstructionCreate spec.InstructionCreate

// Validate checks c: the instruction-create schema, a Regex pattern that
// compiles within the limits of policy.CheckPattern, usedBy without repeats
// (in any case), an assessmentId without control characters. A failure is a
// *spec.Error of kind spec.ErrInvalid naming the fields to blame. Whether
// the agents of usedBy are the organisation's is [Store.CreateInstruction]'s
// to check.
func (c InstructionCreate) Validate() error {
	if err := reqcheck.Value("instruction-create", spec.InstructionCreate(c)); err != nil {
		return err
	}
	if err := checkTrigger(c.Trigger); err != nil {
		return err
	}
	if err := checkAssessmentID(c.AssessmentID); err != nil {
		return err
	}
	_, err := normaliseUsedBy(c.UsedBy)
	return err
}

// normalised returns c, valid, with its ids in lowercase and, for Regex and
// StringMatch triggers, isCaseSensitive explicit.
func (c InstructionCreate) normalised() InstructionCreate {
	c.Trigger = normaliseTrigger(c.Trigger)
	c.CategoryID = lowerPtr(c.CategoryID)
	c.UsedBy, _ = normaliseUsedBy(c.UsedBy)
	return c
}

// InstructionPatch is a request to change an instruction: the body of PATCH
// /organisations/{id}/instructions/{id}.
type InstructionPatch spec.InstructionPatch

// Validate checks p like [InstructionCreate.Validate], against the
// instruction-patch schema. Rules that involve the stored instruction
// (allowRedaction against the resulting trigger, the read-only fields) are
// checked by [ApplyPatch].
func (p InstructionPatch) Validate() error {
	if err := reqcheck.Value("instruction-patch", spec.InstructionPatch(p)); err != nil {
		return err
	}
	if p.Trigger != nil {
		if err := checkTrigger(*p.Trigger); err != nil {
			return err
		}
	}
	if err := checkAssessmentID(p.AssessmentID.Ptr()); p.AssessmentID.Set && err != nil {
		return err
	}
	if p.UsedBy != nil {
		if _, err := normaliseUsedBy(*p.UsedBy); err != nil {
			return err
		}
	}
	return nil
}

// normalised returns p, valid, normalised like [InstructionCreate]'s.
func (p InstructionPatch) normalised() InstructionPatch {
	if p.Trigger != nil {
		t := normaliseTrigger(*p.Trigger)
		p.Trigger = &t
	}
	if p.CategoryID.Set && !p.CategoryID.Null {
		p.CategoryID.Value = strings.ToLower(p.CategoryID.Value)
	}
	if p.UsedBy != nil {
		u, _ := normaliseUsedBy(*p.UsedBy)
		p.UsedBy = &u
	}
	return p
}

// ApplyPatch returns in with the fields of p, a valid patch, applied, and
// checks the rules that span fields of the result. The read-only fields of p
// (id, createdAt, updatedAt), when sent, must equal in's: a client that
// edits an instruction it fetched sends them back unchanged, and a different
// value (another id, or the updatedAt of an older version) is an error
// naming the field. It does not touch the timestamps.
func ApplyPatch(in spec.Instruction, p InstructionPatch) (spec.Instruction, error) {
	if p.ID != nil && !strings.EqualFold(*p.ID, in.ID) {
		return in, reqcheck.Invalid("id", "is read-only: this instruction's id is %s; leave it out or send it unchanged", in.ID)
	}
	if p.CreatedAt != nil && !p.CreatedAt.Equal(in.CreatedAt.Time) {
		return in, reqcheck.Invalid("createdAt", "is read-only: this instruction's createdAt is %s; leave it out or send it unchanged", in.CreatedAt)
	}
	if p.UpdatedAt != nil && !p.UpdatedAt.Equal(in.UpdatedAt.Time) {
		return in, reqcheck.Invalid("updatedAt", "is read-only: this instruction's updatedAt is %s (it changed since the value sent was read, or the value was edited); leave it out or send it unchanged", in.UpdatedAt)
	}
	p = p.normalised()
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
		return in, reqcheck.Invalid("allowRedaction", "is valid only with a Regex or StringMatch trigger; the instruction's trigger would be Semantic")
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
		return reqcheck.Invalid("trigger.pattern", "%s", err.Error())
	}
	return nil
}

// normaliseUsedBy returns the agent ids in lowercase; one listed twice (in
// any case) is an error naming usedBy.
func normaliseUsedBy(ids []string) ([]string, error) {
	out := make([]string, len(ids))
	seen := make(map[string]int, len(ids))
	for i, id := range ids {
		id = strings.ToLower(id)
		if j, dup := seen[id]; dup {
			return nil, reqcheck.Invalid("usedBy", "item %d: agent %s is already listed at item %d", i, id, j)
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
		return reqcheck.Invalid("assessmentId", "must not hold control characters")
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

// describeAgent names an agent for messages.
func describeAgent(id, name string) string { return fmt.Sprintf("%s (%s)", id, name) }
