package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/orgapi"
	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/internal/infra/reqcheck"
	"github.com/aiusage/kit/spec"
)

// The instruction pages hold no rules of their own: the list's filters go
// through orgapi.ParseInstructionQuery, and a form becomes the request the
// API decodes (org.InstructionCreate, org.InstructionPatch) and passes the
// same Validate, so a form meets the API's checks and messages.

// instructionFilters are the parameters of ParseInstructionQuery the list's
// form sends.
var instructionFilters = []string{"search", "agentId", "agentType", "triggerType", "action", "page", "pageSize"}

// choices are the values of the form's selects. The agent type has one
// value (spec.AgentTypeDataProtection), so the form states it instead of
// offering a choice.
type choices struct {
	TriggerTypes, Actions, Criticalities []string
	// Sensitivities are those of a Semantic trigger, each with its label.
	Sensitivities [][2]string
	Categories    []org.DataCategory
}

var instructionChoices = choices{
	TriggerTypes:  []string{spec.TriggerRegex, spec.TriggerStringMatch, spec.TriggerSemantic},
	Actions:       []string{spec.ActionBlock, spec.ActionAllow},
	Criticalities: []string{spec.CriticalityHigh, spec.CriticalityLow},
	Sensitivities: [][2]string{{spec.SensitivityStandard, "Standard: few false alarms"},
		{spec.SensitivityHigh, "High: catch more, more alarms"}},
	Categories: org.DataCategories(),
}

type instructionRow struct {
	spec.Instruction
	Agents   []string // names of usedBy
	Category string   // the name of the data category, if it has one
}

type instructionsData struct {
	Filters    map[string]string
	Agents     []spec.Agent
	Rows       []instructionRow
	List       spec.InstructionList
	From, To   int
	Prev, Next string // links to the neighbouring pages, empty at the ends
	PageSizes  []int
	Choices    choices
}

// instructions lists the organisation's instructions with the filters of
// the API's list.
func (d *Dashboard) instructions(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	p := &pageData{Title: "Instructions", Nav: "instructions"}
	switch r.URL.Query().Get("done") {
	case "created":
		p.Notice = "The instruction is created."
	case "updated":
		p.Notice = "The instruction is saved."
	case "deleted":
		p.Notice = "The instruction is deleted and removed from its agents."
	}
	// A GET form sends its empty fields too; an empty field is no filter.
	sent := url.Values{}
	data := instructionsData{Filters: map[string]string{}, PageSizes: []int{20, 50, 100}, Choices: instructionChoices}
	for _, name := range instructionFilters {
		for _, val := range r.URL.Query()[name] {
			if val != "" {
				sent.Add(name, val)
				data.Filters[name] = val
			}
		}
	}
	agents, err := d.cfg.Orgs.Agents(r.Context(), v.Organisation.ID)
	if err != nil {
		return err
	}
	data.Agents = agents
	p.Data = data
	q, err := orgapi.ParseInstructionQuery(sent.Encode())
	if msg, status, ok := clientMessage(err); ok {
		p.Error = msg
		d.render(w, r, status, "instructions", p)
		return nil
	}
	if err != nil {
		return err
	}
	list, err := d.cfg.Orgs.ListInstructions(r.Context(), v.Organisation.ID, q)
	if err != nil {
		return err
	}
	names := make(map[string]string, len(agents))
	for _, a := range agents {
		names[a.ID] = a.Name
	}
	data.List = list
	for _, in := range list.Items {
		row := instructionRow{Instruction: in}
		if in.CategoryID != nil {
			row.Category, _ = org.DataCategoryName(*in.CategoryID)
		}
		for _, id := range in.UsedBy {
			if n, ok := names[id]; ok {
				row.Agents = append(row.Agents, n)
			} else {
				row.Agents = append(row.Agents, id)
			}
		}
		data.Rows = append(data.Rows, row)
	}
	if len(list.Items) > 0 {
		data.From = (list.Page-1)*list.PageSize + 1
		data.To = data.From + len(list.Items) - 1
	}
	pageLink := func(n int) string {
		l := url.Values{}
		for k, vs := range sent {
			l[k] = vs
		}
		l.Set("page", strconv.Itoa(n))
		return "/instructions?" + l.Encode()
	}
	if list.Page > 1 {
		data.Prev = pageLink(min(list.Page-1, max(1, (list.TotalCount+list.PageSize-1)/list.PageSize)))
	}
	if list.Page*list.PageSize < list.TotalCount {
		data.Next = pageLink(list.Page + 1)
	}
	p.Data = data
	d.render(w, r, http.StatusOK, "instructions", p)
	return nil
}

// instructionForm is the state of the create and edit form, as the user
// typed it.
type instructionForm struct {
	ID             string // empty when creating
	Title          string
	AgentType      string
	TriggerType    string
	Pattern        string
	Values         string // one per line
	Text           string
	Sensitivity    string // of a Semantic trigger: "", standard or high
	CaseSensitive  bool
	Action         string
	Criticality    string
	CategoryID     string
	UsedBy         map[string]bool // for the checkboxes
	UsedByList     []string        // in the order sent
	AllowRedaction bool
	// AssessmentID is the stored instruction's, shown but never sent: the
	// form leaves it as the API set it.
	AssessmentID string
}

// OtherCategory reports whether the form's category is set but none of the
// named ones (an id the API was given).
func (f instructionForm) OtherCategory() bool {
	_, named := org.DataCategoryName(strings.ToLower(f.CategoryID))
	return f.CategoryID != "" && !named
}

type instructionFormData struct {
	Form    instructionForm
	Agents  []spec.Agent
	Max     int
	Choices choices
	// Problems are the API's messages, each naming a field; FieldErrors
	// holds them by field, for the message next to the input.
	Problems    []spec.ProblemField
	FieldErrors map[string]string
}

// formOf reads the instruction form. Bytes that are not UTF-8 read as
// U+FFFD, one each, as they would in the JSON body of the API.
func formOf(form url.Values) instructionForm {
	get := func(name string) string { return string([]rune(form.Get(name))) }
	used := map[string]bool{}
	list := []string{}
	for _, id := range form["usedBy"] {
		id = string([]rune(id))
		used[id] = true
		list = append(list, id)
	}
	return instructionForm{
		Title: get("title"), AgentType: get("agentType"), TriggerType: get("triggerType"),
		Pattern: get("pattern"), Values: get("values"), Text: get("text"),
		Sensitivity: get("sensitivity"), CaseSensitive: form.Get("isCaseSensitive") != "", Action: get("action"), Criticality: get("criticality"),
		CategoryID: strings.TrimSpace(get("categoryId")), UsedBy: used, UsedByList: list, AllowRedaction: form.Get("allowRedaction") != "",
	}
}

func formFromInstruction(in spec.Instruction) instructionForm {
	f := instructionForm{ID: in.ID, Title: in.Title, AgentType: in.AgentType, TriggerType: in.Trigger.Type,
		Pattern: in.Trigger.Pattern, Values: strings.Join(in.Trigger.Values, "\n"), Text: in.Trigger.Text,
		Sensitivity: in.Trigger.Sensitivity, CaseSensitive: in.Trigger.CaseSensitive(), Action: in.Action, Criticality: in.Criticality,
		UsedBy: map[string]bool{}, AllowRedaction: in.AllowRedaction}
	if in.CategoryID != nil {
		f.CategoryID = *in.CategoryID
	}
	if in.AssessmentID != nil {
		f.AssessmentID = *in.AssessmentID
	}
	for _, id := range in.UsedBy {
		f.UsedBy[id] = true
	}
	f.UsedByList = in.UsedBy
	return f
}

// trigger returns the trigger the form describes: only the input of its
// type is taken, and isCaseSensitive only where the API knows it.
func (f instructionForm) trigger() spec.Trigger {
	t := spec.Trigger{Type: f.TriggerType}
	switch f.TriggerType {
	case spec.TriggerRegex:
		t.Pattern = f.Pattern
	case spec.TriggerStringMatch:
		t.Values = []string{} // none given: the schema names trigger.values
		for line := range strings.Lines(f.Values) {
			if line = strings.TrimSpace(line); line != "" {
				t.Values = append(t.Values, line)
			}
		}
	case spec.TriggerSemantic:
		t.Text, t.Sensitivity = f.Text, f.Sensitivity
	}
	if f.TriggerType == spec.TriggerRegex || f.TriggerType == spec.TriggerStringMatch {
		cs := f.CaseSensitive
		t.IsCaseSensitive = &cs
	}
	return t
}

func (f instructionForm) usedBy() []string {
	if f.UsedByList == nil {
		return []string{}
	}
	return f.UsedByList
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// createRequest is the create request of the form, without an assessment
// id: a person creating an instruction has none.
func (f instructionForm) createRequest() org.InstructionCreate {
	return org.InstructionCreate{AgentType: f.AgentType, Title: f.Title, Trigger: f.trigger(),
		Action: f.Action, Criticality: f.Criticality, CategoryID: optional(f.CategoryID), UsedBy: f.usedBy(),
		AllowRedaction: f.AllowRedaction}
}

// patchRequest is the patch request of the form: every field but the
// assessment id, which stays as it is; an empty category cleared.
func (f instructionForm) patchRequest() org.InstructionPatch {
	trigger, used := f.trigger(), f.usedBy()
	nullable := func(s string) spec.Nullable[string] {
		if s == "" {
			return spec.Null[string]()
		}
		return spec.Some(s)
	}
	return org.InstructionPatch{AgentType: &f.AgentType, Title: &f.Title, Trigger: &trigger,
		Action: &f.Action, Criticality: &f.Criticality, CategoryID: nullable(f.CategoryID), UsedBy: &used,
		AllowRedaction: &f.AllowRedaction}
}

func (d *Dashboard) renderInstructionForm(w http.ResponseWriter, r *http.Request, status int, f instructionForm, p *pageData) error {
	agents, err := d.cfg.Orgs.Agents(r.Context(), viewerOf(r).Organisation.ID)
	if err != nil {
		return err
	}
	data, _ := p.Data.(instructionFormData)
	data.Form, data.Agents, data.Max, data.Choices = f, agents, spec.MaxInstructionsPerAgent, instructionChoices
	p.Title, p.Nav, p.Data = "New instruction", "instructions", data
	if f.ID != "" {
		p.Title = "Edit instruction"
	}
	d.render(w, r, status, "instruction", p)
	return nil
}

// formFailed re-renders the form with the API's messages for a client
// error, and returns false for any other error.
func (d *Dashboard) formFailed(w http.ResponseWriter, r *http.Request, f instructionForm, err error) (bool, error) {
	msg, status, ok := clientMessage(err)
	if !ok {
		return false, nil
	}
	data := instructionFormData{FieldErrors: map[string]string{}}
	p := &pageData{Error: msg}
	var e *spec.Error
	if errors.As(err, &e) {
		p.Error = e.Detail
		if e.Detail == reqcheck.DetailBody {
			p.Error = "The instruction is not saved: correct the fields named below."
		}
		data.Problems = e.Fields
		for _, pf := range e.Fields {
			if data.FieldErrors[pf.Field] != "" {
				data.FieldErrors[pf.Field] += "; "
			}
			data.FieldErrors[pf.Field] += pf.Message
		}
	}
	p.Data = data
	return true, d.renderInstructionForm(w, r, status, f, p)
}

func (d *Dashboard) newInstruction(w http.ResponseWriter, r *http.Request) error {
	f := instructionForm{AgentType: spec.AgentTypeDataProtection, TriggerType: spec.TriggerRegex, CaseSensitive: true,
		Action: spec.ActionBlock, Criticality: spec.CriticalityHigh, UsedBy: map[string]bool{}}
	if id := r.URL.Query().Get("agentId"); id != "" {
		f.UsedBy[strings.ToLower(id)] = true
	}
	return d.renderInstructionForm(w, r, http.StatusOK, f, &pageData{})
}

func (d *Dashboard) createInstruction(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	f := formOf(r.PostForm)
	c := f.createRequest()
	err := c.Validate()
	if err == nil {
		_, err = d.cfg.Orgs.CreateInstruction(r.Context(), v.Organisation.ID, c, v.User.Actor())
	}
	if handled, rerr := d.formFailed(w, r, f, err); handled {
		return rerr
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/instructions?done=created", http.StatusSeeOther)
	return nil
}

// instructionOf loads the instruction of the path; an id that is not a
// UUID names none.
func (d *Dashboard) instructionOf(r *http.Request) (spec.Instruction, error) {
	id, ok := ident.CanonicalUUID(chi.URLParam(r, "instructionId"))
	if !ok {
		return spec.Instruction{}, &spec.Error{Kind: spec.ErrNotFound, Detail: "No such instruction: its id is not a UUID."}
	}
	return d.cfg.Orgs.Instruction(r.Context(), viewerOf(r).Organisation.ID, id)
}

func (d *Dashboard) editInstruction(w http.ResponseWriter, r *http.Request) error {
	in, err := d.instructionOf(r)
	if msg, status, ok := clientMessage(err); ok {
		d.errorPage(w, r, status, msg)
		return nil
	}
	if err != nil {
		return err
	}
	return d.renderInstructionForm(w, r, http.StatusOK, formFromInstruction(in), &pageData{})
}

func (d *Dashboard) updateInstruction(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	in, err := d.instructionOf(r)
	if msg, status, ok := clientMessage(err); ok {
		d.errorPage(w, r, status, msg)
		return nil
	}
	if err != nil {
		return err
	}
	f := formOf(r.PostForm)
	f.ID = in.ID
	if in.AssessmentID != nil {
		f.AssessmentID = *in.AssessmentID
	}
	if sameSet(f.UsedByList, in.UsedBy) {
		f.UsedByList = in.UsedBy // the checkboxes' order is not a change
	}
	patch := f.patchRequest()
	if err = patch.Validate(); err == nil {
		_, err = d.cfg.Orgs.UpdateInstruction(r.Context(), v.Organisation.ID, in.ID, patch, v.User.Actor())
	}
	if handled, rerr := d.formFailed(w, r, f, err); handled {
		return rerr
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/instructions?done=updated", http.StatusSeeOther)
	return nil
}

func (d *Dashboard) deleteInstruction(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	in, err := d.instructionOf(r)
	if err == nil {
		err = d.cfg.Orgs.DeleteInstruction(r.Context(), v.Organisation.ID, in.ID, v.User.Actor())
	}
	if msg, status, ok := clientMessage(err); ok {
		d.errorPage(w, r, status, msg)
		return nil
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/instructions?done=deleted", http.StatusSeeOther)
	return nil
}

// sameSet reports whether a and b hold the same ids, in any order.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	in := make(map[string]bool, len(b))
	for _, id := range b {
		in[id] = true
	}
	seen := make(map[string]bool, len(a))
	for _, id := range a {
		id = strings.ToLower(id)
		if !in[id] || seen[id] {
			return false
		}
		seen[id] = true
	}
	return true
}
