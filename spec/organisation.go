package spec

// Organisation is an organisation of the oversight service.
type Organisation struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// AgentTypeDataProtection is the only agent type, and the only accepted value
// of an instruction's agentType.
const AgentTypeDataProtection = "DataProtection"

// MaxInstructionsPerAgent is the most instructions one agent may hold.
const MaxInstructionsPerAgent = 100

// Agent is an agent of an organisation; its ID is a value of an instruction's
// usedBy.
type Agent struct {
	ID               string `json:"id"`
	Name             string `json:"name"`
	Type             string `json:"type"`
	InstructionCount int    `json:"instructionCount"`
}

// Trigger types.
const (
	TriggerSemantic    = "Semantic"
	TriggerRegex       = "Regex"
	TriggerStringMatch = "StringMatch"
)

// Instruction actions and criticalities.
const (
	ActionAllow     = "Allow"
	ActionBlock     = "Block"
	CriticalityLow  = "Low"
	CriticalityHigh = "High"
)

// Limits of an instruction, from the organisation API and the kit's decisions.
const (
	MaxTitleLength        = 200
	MaxPatternLength      = 1000
	MaxStringMatchValues  = 1000
	MaxStringMatchValue   = 200
	MaxSemanticTextLength = 2000
)

// Trigger is what makes an instruction apply, tagged by Type. Semantic uses
// Text and Sensitivity; Regex uses Pattern; StringMatch uses Values.
// IsCaseSensitive applies to Regex and StringMatch and defaults to true when
// absent (nil).
type Trigger struct {
	Type            string   `json:"type"`
	Text            string   `json:"text,omitempty"`
	Pattern         string   `json:"pattern,omitempty"`
	Values          []string `json:"values,omitempty"`
	IsCaseSensitive *bool    `json:"isCaseSensitive,omitempty"`
	// Sensitivity, on a Semantic trigger only, chooses the matcher's
	// operating point: SensitivityStandard (the default, also when empty),
	// the threshold chosen for few false alarms, or SensitivityHigh, one
	// chosen for recall (more matches, more false alarms).
	Sensitivity string `json:"sensitivity,omitempty"`
}

// Sensitivities of a Semantic [Trigger].
const (
	SensitivityStandard = "standard"
	SensitivityHigh     = "high"
)

// HighSensitivity reports whether t asks for the recall-oriented threshold:
// a Semantic trigger with Sensitivity SensitivityHigh.
func (t Trigger) HighSensitivity() bool {
	return t.Type == TriggerSemantic && t.Sensitivity == SensitivityHigh
}

// SemanticTrigger returns a Semantic trigger matching text by meaning.
func SemanticTrigger(text string) Trigger { return Trigger{Type: TriggerSemantic, Text: text} }

// RegexTrigger returns a Regex trigger over an RE2 pattern.
func RegexTrigger(pattern string, caseSensitive bool) Trigger {
	return Trigger{Type: TriggerRegex, Pattern: pattern, IsCaseSensitive: &caseSensitive}
}

// StringMatchTrigger returns a StringMatch trigger over values.
func StringMatchTrigger(values []string, caseSensitive bool) Trigger {
	return Trigger{Type: TriggerStringMatch, Values: values, IsCaseSensitive: &caseSensitive}
}

// CaseSensitive reports the effective isCaseSensitive: true unless set false.
func (t Trigger) CaseSensitive() bool { return t.IsCaseSensitive == nil || *t.IsCaseSensitive }

// Instruction is an organisation-specific rule enforced by the data protection
// agent. CategoryID and AssessmentID are null when unset; UsedBy is never null.
type Instruction struct {
	ID             string   `json:"id"`
	AgentType      string   `json:"agentType"`
	Title          string   `json:"title"`
	Trigger        Trigger  `json:"trigger"`
	Action         string   `json:"action"`
	Criticality    string   `json:"criticality"`
	CategoryID     *string  `json:"categoryId"`
	UsedBy         []string `json:"usedBy"`
	AllowRedaction bool     `json:"allowRedaction"`
	AssessmentID   *string  `json:"assessmentId"`
	CreatedAt      Time     `json:"createdAt"`
	UpdatedAt      Time     `json:"updatedAt"`
}

// InstructionCreate is the body of POST /organisations/{id}/instructions.
type InstructionCreate struct {
	AgentType      string   `json:"agentType"`
	Title          string   `json:"title"`
	Trigger        Trigger  `json:"trigger"`
	Action         string   `json:"action"`
	Criticality    string   `json:"criticality"`
	CategoryID     *string  `json:"categoryId,omitempty"`
	UsedBy         []string `json:"usedBy,omitempty"`
	AllowRedaction bool     `json:"allowRedaction,omitempty"`
	AssessmentID   *string  `json:"assessmentId,omitempty"`
}

// InstructionPatch is the body of PATCH /organisations/{id}/instructions/{id}.
// A nil field is left unchanged. CategoryID and AssessmentID use [Nullable] so
// that an explicit null (clear) differs from an omitted field (keep).
type InstructionPatch struct {
	AgentType      *string          `json:"agentType,omitempty"`
	Title          *string          `json:"title,omitempty"`
	Trigger        *Trigger         `json:"trigger,omitempty"`
	Action         *string          `json:"action,omitempty"`
	Criticality    *string          `json:"criticality,omitempty"`
	CategoryID     Nullable[string] `json:"categoryId,omitzero"`
	UsedBy         *[]string        `json:"usedBy,omitempty"`
	AllowRedaction *bool            `json:"allowRedaction,omitempty"`
	AssessmentID   Nullable[string] `json:"assessmentId,omitzero"`
	// ID, CreatedAt and UpdatedAt are read-only. A client that edits an
	// instruction it fetched may send them back; they are accepted when they
	// equal the instruction's current values, and a different value is an
	// error naming the field.
	ID        *string `json:"id,omitempty"`
	CreatedAt *Time   `json:"createdAt,omitempty"`
	UpdatedAt *Time   `json:"updatedAt,omitempty"`
}

// InstructionList is one page of GET /organisations/{id}/instructions.
type InstructionList struct {
	Items      []Instruction `json:"items"`
	TotalCount int           `json:"totalCount"`
	Page       int           `json:"page"`
	PageSize   int           `json:"pageSize"`
}
