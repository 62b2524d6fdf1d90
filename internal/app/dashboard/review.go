package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/spec"
)

// MaxCommentLength bounds a reviewer's comment, in bytes.
const MaxCommentLength = 2000

// segment is a piece of a message's text, marked when a reason matched it.
type segment struct {
	Text   string
	Marked bool
}

// excerptView is a part of a message as a page shows it.
type excerptView struct {
	reviewapi.Excerpt
	Segments []segment
	Shown    int // characters shown
	// Redaction is true for the redacted copy: its marks are the
	// redaction marks.
	Redaction bool
}

// From and To are the first and last characters shown, counted from 1.
func (e excerptView) From() int { return e.Start + 1 }
func (e excerptView) To() int   { return e.Start + e.Shown }

// Position is the message's position, counted from 1.
func (e excerptView) Position() int { return e.Index + 1 }

type taskView struct {
	reviewapi.QueueItem
	Messages []excerptView
	// Proposal is the redacted copy the policy offers, message by
	// message, the redaction marks set apart; nil when there is none.
	Proposal []excerptView
}

// MoreMessages is how many messages of the request the page leaves out.
func (v taskView) MoreMessages() int { return v.MessageCount - len(v.Messages) }

// Cut reports whether the page shows less than the whole request or its
// redacted copy.
func (v taskView) Cut() bool {
	if v.MessageCount > len(v.Messages) || (v.HasProposal && v.ProposalCount > len(v.Proposal)) {
		return true
	}
	for _, m := range append(slices.Clip(v.Messages), v.Proposal...) {
		if m.Cut() {
			return true
		}
	}
	return false
}

type reviewData struct {
	Tasks []taskView
	// Total is how many tasks wait; First and Last the positions (from 1)
	// of the page's first and last.
	Total, First, Last int
	// PrevURL and NextURL link the pages before and after; empty when
	// there is none.
	PrevURL, NextURL string
	// ExcerptChars is how many characters of a message the page shows.
	ExcerptChars int
}

// reviewQueue shows the tasks waiting for a person, oldest first, a page at
// a time: ?after=POSITION the page after a task, ?before=POSITION the page
// before one.
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

// queueQuery reads the page's position from the address; a position the
// service did not write is an error of kind spec.ErrInvalid.
func queueQuery(r *http.Request) (reviewapi.QueueQuery, error) {
	var q reviewapi.QueueQuery
	for name, dst := range map[string]**reviewapi.QueueKey{"after": &q.After, "before": &q.Before} {
		v := r.URL.Query().Get(name)
		if v == "" {
			continue
		}
		k, err := reviewapi.ParseQueueKey(v)
		if err != nil {
			return q, err
		}
		*dst = &k
	}
	if q.After != nil && q.Before != nil {
		return q, fmt.Errorf("a page is after a task or before one, not both: %w", spec.ErrInvalid)
	}
	return q, nil
}

func (d *Dashboard) renderQueue(w http.ResponseWriter, r *http.Request, status int, p *pageData) error {
	q, err := queueQuery(r)
	if err != nil {
		d.errorPage(w, r, http.StatusBadRequest, "This page link is not one of the review queue's: open the queue from its first page.")
		return nil
	}
	page, err := d.cfg.Review.QueuePage(r.Context(), viewerOf(r).Organisation.ID, q)
	if err != nil {
		return err
	}
	data := reviewData{Total: page.Total, ExcerptChars: reviewapi.DefaultExcerptChars}
	if len(page.Items) > 0 {
		data.First, data.Last = page.Offset+1, page.Offset+len(page.Items)
	}
	if page.Prev != nil {
		data.PrevURL = "/review?before=" + url.QueryEscape(page.Prev.String())
	}
	if page.Next != nil {
		data.NextURL = "/review?after=" + url.QueryEscape(page.Next.String())
	}
	for _, it := range page.Items {
		data.Tasks = append(data.Tasks, viewTask(it, d.cfg.Review.RedactionMark()))
	}
	p.Title, p.Nav, p.Data = "Review", "review", data
	d.render(w, r, status, "review", p)
	return nil
}

// viewTask splits each excerpt at the spans its reasons matched.
func viewTask(it reviewapi.QueueItem, redactionMark string) taskView {
	v := taskView{QueueItem: it}
	for _, e := range it.Messages {
		v.Messages = append(v.Messages, viewExcerpt(e, ""))
	}
	for _, e := range it.Proposal {
		v.Proposal = append(v.Proposal, viewExcerpt(e, redactionMark))
	}
	return v
}

// viewExcerpt splits an excerpt at its spans, or, given a redaction mark,
// at each occurrence of it.
func viewExcerpt(e reviewapi.Excerpt, redactionMark string) excerptView {
	text := []rune(e.Text)
	v := excerptView{Excerpt: e, Shown: len(text), Redaction: redactionMark != ""}
	if redactionMark != "" {
		v.Segments = markAll(e.Text, redactionMark)
	} else {
		v.Segments = mark(text, e.Spans)
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
	id, ok := d.taskID(w, r)
	if !ok {
		return nil
	}
	decision := r.PostForm.Get("decision")
	comment := strings.TrimSpace(r.PostForm.Get("comment"))
	p := &pageData{}
	dec := reviewapi.Decision{Choice: decision, UserID: v.User.ID, Comment: comment}
	switch {
	case dec.Validate() != nil:
		p.Error = "Choose approve, approve as redacted, reject or request changes."
		return d.renderQueue(w, r, http.StatusBadRequest, p)
	case len(comment) > MaxCommentLength:
		p.Error = "The comment is longer than 2,000 characters."
		return d.renderQueue(w, r, http.StatusBadRequest, p)
	}
	_, err := d.cfg.Review.Decide(r.Context(), v.Organisation.ID, id, dec)
	switch {
	case errors.Is(err, reviewapi.ErrTaskNotFound): // another organisation's task answers as unknown
		d.errorPage(w, r, http.StatusNotFound, "No such review task.")
		return nil
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
