package dashboard

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/spec"
)

// Bounds of the task page and of its download.
const (
	// TaskPageChars is the most characters of a task's text one page of
	// the task shows.
	TaskPageChars = 20_000
	// TaskPageMessages is the most messages (or parts of one) one page of
	// the task shows.
	TaskPageMessages = 50
	// maxSemanticOnTaskPage is the most sentences of one Semantic reason
	// the task page shows.
	maxSemanticOnTaskPage = 20
	// downloadChunk is how many characters the download reads at once;
	// downloadMessages how many messages.
	downloadChunk    = reviewapi.MaxTextChars
	downloadMessages = 1000
)

// textPage is where a page of a task's text starts: message Message, from
// character At.
type textPage struct{ Message, At int }

// layoutPages cuts a text of messages of these sizes (in characters) into
// pages of at most chars characters and at most parts messages or parts of
// one, and returns where each starts. A text without messages is one empty
// page.
func layoutPages(sizes []int, chars, parts int) []textPage {
	pages := []textPage{{}}
	m, at := 0, 0
	for m < len(sizes) {
		budget, n := chars, 0
		for m < len(sizes) && budget > 0 && n < parts {
			take := min(sizes[m]-at, budget)
			budget -= take
			n++
			if at += take; at >= sizes[m] {
				m, at = m+1, 0
			}
		}
		if m < len(sizes) {
			pages = append(pages, textPage{m, at})
		}
	}
	return pages
}

// window returns the TextQuery of page i of pages over messages of sizes.
func window(pages []textPage, i int, sizes []int, chars int, redacted bool) reviewapi.TextQuery {
	q := reviewapi.TextQuery{Redacted: redacted, First: pages[i].Message, From: pages[i].At, Chars: chars}
	q.Last = len(sizes) - 1
	if i+1 < len(pages) {
		next := pages[i+1]
		q.Last = next.Message
		if next.At == 0 {
			q.Last--
		}
	}
	q.Last = max(q.Last, q.First)
	return q
}

type taskPageData struct {
	Task     taskView
	Waiting  bool
	Redacted bool // the redacted copy is shown, not the request
	Parts    []excerptView
	// Messages and Chars are the messages of the copy shown and their
	// characters in all.
	Messages, Chars int
	// Page and Pages count from 1.
	Page, Pages, PageChars            int
	PrevURL, NextURL                  string
	SentURL, RedactedURL, DownloadURL string
}

// taskID returns the task id of the request's path, in its canonical form;
// when it is not a UUID it answers 404 and returns false.
func (d *Dashboard) taskID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id, ok := ident.CanonicalUUID(chi.URLParam(r, "taskId"))
	if !ok {
		d.errorPage(w, r, http.StatusNotFound, "No such review task.")
	}
	return id, ok
}

// taskCopy reports whether ?copy asks for the redacted copy of a task rather
// than its request (copy=request, the default); any other value is answered
// with 400 and false is returned as ok.
func (d *Dashboard) taskCopy(w http.ResponseWriter, r *http.Request) (redacted, ok bool) {
	switch r.URL.Query().Get("copy") {
	case "", "request":
		return false, true
	case "redacted":
		return true, true
	default:
		d.errorPage(w, r, http.StatusBadRequest, "copy must be request or redacted.")
		return false, false
	}
}

// reviewTask shows one task of the organisation: its reasons, the decision
// form while it waits, and its text a page at a time (?page=N, from 1), of
// the request or, with ?copy=redacted, of the redacted copy.
func (d *Dashboard) reviewTask(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	id, ok := d.taskID(w, r)
	if !ok {
		return nil
	}
	query := r.URL.Query()
	redacted, ok := d.taskCopy(w, r)
	if !ok {
		return nil
	}
	page := 1
	if s := query.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			d.errorPage(w, r, http.StatusBadRequest, "page must be a whole number from 1.")
			return nil
		}
		page = n
	}
	ctx := r.Context()
	it, err := d.cfg.Review.TaskSummary(ctx, v.Organisation.ID, id, 1, -1, maxSemanticOnTaskPage)
	if errors.Is(err, reviewapi.ErrTaskNotFound) {
		d.errorPage(w, r, http.StatusNotFound, "No such review task.")
		return nil
	}
	if err != nil {
		return err
	}
	if redacted && !it.HasProposal {
		d.errorPage(w, r, http.StatusNotFound, "This task has no redacted copy.")
		return nil
	}
	sizes, err := d.cfg.Review.MessageSizes(ctx, v.Organisation.ID, id, redacted)
	if err != nil {
		return err
	}
	pages := layoutPages(sizes, TaskPageChars, TaskPageMessages)
	if page > len(pages) {
		d.errorPage(w, r, http.StatusNotFound, "This task's text has "+strconv.Itoa(len(pages))+" pages, not "+strconv.Itoa(page)+".")
		return nil
	}
	data := taskPageData{Task: taskView{QueueItem: it}, Waiting: it.Status == spec.StatusRequiresIntervention, Redacted: redacted,
		Messages: len(sizes), Page: page, Pages: len(pages), PageChars: TaskPageChars}
	for _, n := range sizes {
		data.Chars += n
	}
	base := "/review/" + id
	copyParam := ""
	if redacted {
		copyParam = "copy=redacted&"
	}
	if page > 1 {
		data.PrevURL = base + "?" + copyParam + "page=" + strconv.Itoa(page-1)
	}
	if page < len(pages) {
		data.NextURL = base + "?" + copyParam + "page=" + strconv.Itoa(page+1)
	}
	data.SentURL, data.RedactedURL = base, base+"?copy=redacted"
	data.DownloadURL = base + "/request.txt"
	if redacted {
		data.DownloadURL += "?copy=redacted"
	}
	if len(sizes) > 0 {
		parts, err := d.cfg.Review.TaskText(ctx, v.Organisation.ID, id, window(pages, page-1, sizes, TaskPageChars, redacted))
		if err != nil {
			return err
		}
		mark := ""
		if redacted {
			mark = d.cfg.Review.RedactionMark()
		}
		for _, e := range parts {
			data.Parts = append(data.Parts, viewExcerpt(e, mark))
		}
	}
	d.render(w, r, http.StatusOK, "task", &pageData{Title: "Review task", Nav: "review", Data: data})
	return nil
}

// reviewTaskText sends a task's request (or, with ?copy=redacted, its
// redacted copy) as plain text, read and written a part at a time: each
// message under a line naming its position and role.
func (d *Dashboard) reviewTaskText(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	id, ok := d.taskID(w, r)
	if !ok {
		return nil
	}
	redacted, ok := d.taskCopy(w, r)
	if !ok {
		return nil
	}
	ctx := r.Context()
	sizes, err := d.cfg.Review.MessageSizes(ctx, v.Organisation.ID, id, redacted)
	if errors.Is(err, reviewapi.ErrTaskNotFound) {
		d.errorPage(w, r, http.StatusNotFound, "No such review task.")
		return nil
	}
	if err != nil {
		return err
	}
	name := "task-" + id + map[bool]string{true: "-redacted"}[redacted] + ".txt"
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	h.Set("Cache-Control", "no-store")
	pages := layoutPages(sizes, downloadChunk, downloadMessages)
	for i := range pages {
		if len(sizes) == 0 {
			break
		}
		parts, err := d.cfg.Review.TaskText(ctx, v.Organisation.ID, id, window(pages, i, sizes, downloadChunk, redacted))
		if err != nil {
			// The status is sent: the text ends short, as a cut
			// connection would.
			if !httpx.ClientGone(r, err) {
				d.cfg.Logger.ErrorContext(ctx, "dashboard: task text", "task", id, "error", err)
			}
			return nil
		}
		for _, e := range parts {
			if e.Start == 0 {
				head := "--- message " + strconv.Itoa(e.Index+1) + " of " + strconv.Itoa(len(sizes)) + " · " + e.Role + " ---\n"
				if e.Index > 0 {
					head = "\n" + head
				}
				if _, err := w.Write([]byte(head)); err != nil {
					return nil
				}
			}
			if _, err := w.Write([]byte(e.Text)); err != nil {
				return nil
			}
		}
	}
	_, _ = w.Write([]byte("\n"))
	return nil
}

// semanticView is a Semantic match as the review pages show it: its
// sentence, with the words the judge quoted highlighted, and how it was
// decided in words.
type semanticView struct {
	// Before, Quote and After are the sentence cut around the quote; a
	// match without a quote (or whose quote the shown sentence does not
	// hold, as when it was cut) is all Before.
	Before, Quote, After string
	// Similarity is the candidate matcher's score (0: none).
	Similarity float64
	// Verdict says in words how the match was decided; "" for a match of
	// the built-in or embeddings matcher alone.
	Verdict string
	// Code is the verdict as recorded (spec.MatchSpan Verdict).
	Code string
}

// verdictWords are the words the review pages give each verdict of a
// Semantic match (spec.MatchSpan Verdict).
var verdictWords = map[string]string{
	"judge":      "the judge quoted",
	"unexamined": "not examined: over the judge's budget",
	"no-answer":  "the judge gave no usable answer",
	"injection":  "the text tries to instruct the judge",
}

// viewSemantic cuts a Semantic match for the review pages. An unknown
// verdict is shown as recorded.
func viewSemantic(m spec.MatchSpan) semanticView {
	v := semanticView{Before: m.Text, Similarity: m.Similarity, Code: m.Verdict}
	if m.Verdict != "" {
		v.Verdict = verdictWords[m.Verdict]
		if v.Verdict == "" {
			v.Verdict = m.Verdict
		}
	}
	if m.Quote != "" {
		if i := strings.Index(m.Text, m.Quote); i >= 0 {
			v.Before, v.Quote, v.After = m.Text[:i], m.Quote, m.Text[i+len(m.Quote):]
		}
	}
	return v
}
