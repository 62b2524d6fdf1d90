package dashboard

import (
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/spec"
)

// MaxCommentLength bounds a reviewer's comment, in bytes.
const MaxCommentLength = 2000

// segment is a piece of a message's text, marked when a reason matched it.
type segment struct {
	Text   string
	Marked bool
}

type messageView struct {
	Role     string
	Segments []segment
}

type reasonView struct {
	spec.ReviewReason
	Matches int
	// Semantic are the sentences a Semantic trigger matched, with their
	// similarity, so the reviewer sees why.
	Semantic []spec.MatchSpan
}

type taskView struct {
	Task     spec.ReviewTask
	Messages []messageView
	Reasons  []reasonView
	// Proposal is the redacted copy the policy offers, message by
	// message, the redaction marks set apart; nil when there is none.
	Proposal []messageView
}

type reviewData struct {
	Tasks []taskView
	// Total is how many tasks wait; the page shows the oldest
	// reviewapi.MaxQueuePage of them.
	Total int
}

// reviewQueue shows the tasks waiting for a person, oldest first.
func (d *Dashboard) reviewQueue(w http.ResponseWriter, r *http.Request) error {
	p := &pageData{}
	switch r.URL.Query().Get("done") {
	case "approve":
		p.Notice = "The task is approved as sent."
	case "approve-redacted":
		p.Notice = "The task is approved as redacted."
	case "reject":
		p.Notice = "The task is rejected."
	case "request-changes":
		p.Notice = "Changes are requested."
	}
	return d.renderQueue(w, r, http.StatusOK, p)
}

func (d *Dashboard) renderQueue(w http.ResponseWriter, r *http.Request, status int, p *pageData) error {
	tasks, total, err := d.cfg.Review.QueuePage(r.Context(), viewerOf(r).Organisation.ID, reviewapi.MaxQueuePage)
	if err != nil {
		return err
	}
	data := reviewData{Total: total}
	for _, t := range tasks {
		data.Tasks = append(data.Tasks, viewTask(t, d.cfg.Review.RedactionMark()))
	}
	p.Title, p.Nav, p.Data = "Review", "review", data
	d.render(w, r, status, "review", p)
	return nil
}

// viewTask splits each message at the spans its reasons matched.
func viewTask(t spec.ReviewTask, redactionMark string) taskView {
	v := taskView{Task: t}
	spans := map[int][][2]int{}
	for _, rs := range t.Reasons {
		rv := reasonView{ReviewReason: rs, Matches: len(rs.Matches)}
		for _, m := range rs.Matches {
			spans[m.MessageIndex] = append(spans[m.MessageIndex], [2]int{m.Start, m.End})
			if m.Text != "" {
				rv.Semantic = append(rv.Semantic, m)
			}
		}
		v.Reasons = append(v.Reasons, rv)
	}
	if t.Request == nil {
		return v
	}
	for i, m := range t.Request.Messages {
		v.Messages = append(v.Messages, messageView{Role: m.Role, Segments: mark([]rune(m.Content), spans[i])})
	}
	if t.RedactedRequest != nil {
		mark := redactionMark
		for _, m := range t.RedactedRequest.Messages {
			v.Proposal = append(v.Proposal, messageView{Role: m.Role, Segments: markAll(m.Content, mark)})
		}
	}
	return v
}

// markAll cuts text into segments, marking every occurrence of mark.
func markAll(text, mark string) []segment {
	var out []segment
	for text != "" {
		i := strings.Index(text, mark)
		if i < 0 {
			return append(out, segment{Text: text})
		}
		if i > 0 {
			out = append(out, segment{Text: text[:i]})
		}
		out = append(out, segment{Text: mark, Marked: true})
		text = text[i+len(mark):]
	}
	return out
}

// mark cuts text into segments, marking the union of spans (half-open, in
// code points); spans out of range are clipped.
func mark(text []rune, spans [][2]int) []segment {
	marked := make([]bool, len(text))
	for _, s := range spans {
		for i := max(s[0], 0); i < min(s[1], len(text)); i++ {
			marked[i] = true
		}
	}
	var out []segment
	start := 0
	for i := 1; i <= len(text); i++ {
		if i == len(text) || marked[i] != marked[start] {
			out = append(out, segment{Text: string(text[start:i]), Marked: marked[start]})
			start = i
		}
	}
	return out
}

// decide records the signed-in user's decision on a task of their
// organisation. Of two reviewers deciding at once, one wins; the other is
// told the task is already decided.
func (d *Dashboard) decide(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	id, ok := httpx.CanonicalUUID(chi.URLParam(r, "taskId"))
	if !ok {
		d.errorPage(w, r, http.StatusNotFound, "No such review task.")
		return nil
	}
	decision := r.PostForm.Get("decision")
	comment := strings.TrimSpace(r.PostForm.Get("comment"))
	p := &pageData{}
	switch {
	case decision != reviewapi.DecisionApprove && decision != reviewapi.DecisionApproveRedacted &&
		decision != reviewapi.DecisionReject && decision != reviewapi.DecisionRequestChanges:
		p.Error = "Choose approve, approve as redacted, reject or request changes."
		return d.renderQueue(w, r, http.StatusBadRequest, p)
	case len(comment) > MaxCommentLength:
		p.Error = "The comment is longer than 2,000 characters."
		return d.renderQueue(w, r, http.StatusBadRequest, p)
	}
	// The task must be the organisation's: another's answers as unknown.
	if _, err := d.cfg.Review.Task(r.Context(), v.Organisation.ID, id); errors.Is(err, reviewapi.ErrTaskNotFound) {
		d.errorPage(w, r, http.StatusNotFound, "No such review task.")
		return nil
	} else if err != nil {
		return err
	}
	_, err := d.cfg.Review.Decide(r.Context(), id, reviewapi.Decision{Choice: decision, UserID: v.User.ID, Comment: comment})
	switch {
	case errors.Is(err, reviewapi.ErrFinal):
		p.Error = "This task is already decided (by another reviewer, or by its deadline); nothing was changed."
		return d.renderQueue(w, r, http.StatusConflict, p)
	case errors.Is(err, reviewapi.ErrNoProposal):
		p.Error = "This task has no redacted copy to approve; nothing was changed."
		return d.renderQueue(w, r, http.StatusBadRequest, p)
	case errors.Is(err, reviewapi.ErrNotReviewer):
		d.errorPage(w, r, http.StatusForbidden, "Only a Reviewer or an Administrator of this organisation may decide its tasks.")
		return nil
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/review?done="+decision, http.StatusSeeOther)
	return nil
}
