package reviewapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// submitMessages creates a task of the tenant's agent with these messages
// (role, content pairs) and requires 201.
func (tn *tenant) submitMessages(t *testing.T, agentID string, msgs ...string) spec.ReviewTask {
	t.Helper()
	var list []map[string]string
	for i := 0; i < len(msgs); i += 2 {
		list = append(list, map[string]string{"role": msgs[i], "content": msgs[i+1]})
	}
	r := tn.call(t, http.MethodPost, "/review-tasks", map[string]any{"agentId": agentID, "request": map[string]any{"messages": list}})
	require.Equal(t, http.StatusCreated, r.Status, "%.2000s", r.Body)
	var task spec.ReviewTask
	require.NoError(t, json.Unmarshal(r.Body, &task))
	return tn.get(t, task.ID)
}

// requireSummary checks a task as a page of the queue shows it against the
// whole task: excerpts of the first messages with their lengths in code
// points, the spans of the matches within them, the reasons.
func requireSummary(t *testing.T, it reviewapi.QueueItem, full spec.ReviewTask, chars, messages int) {
	t.Helper()
	require.Equal(t, full.ID, it.ID)
	require.Equal(t, full.Status, it.Status)
	require.True(t, full.CreatedAt.Time.Equal(it.CreatedAt))
	require.Len(t, it.Reasons, len(full.Reasons))
	for i, r := range full.Reasons {
		require.Equal(t, r.Title, it.Reasons[i].Title)
		require.Equal(t, r.InstructionID, it.Reasons[i].InstructionID)
		require.Equal(t, len(r.Matches), it.Reasons[i].Matches)
	}
	check := func(got []reviewapi.Excerpt, req *spec.ReviewRequest, spans bool) {
		t.Helper()
		require.Len(t, got, min(len(req.Messages), messages))
		for i, e := range got {
			content := []rune(req.Messages[i].Content)
			require.Equal(t, i, e.Index)
			require.Equal(t, req.Messages[i].Role, e.Role)
			require.Equal(t, len(content), e.Chars, "length in code points, from the database")
			require.Equal(t, string(content[:min(chars, len(content))]), e.Text)
			require.Equal(t, len(content) > chars, e.Cut())
			if !spans {
				continue
			}
			var want [][2]int
			for _, r := range full.Reasons {
				for _, m := range r.Matches {
					if m.MessageIndex == i && m.Start < chars {
						want = append(want, [2]int{m.Start, min(m.End, chars)})
					}
				}
			}
			slices.SortFunc(want, func(a, b [2]int) int { return a[0]*1e7 + a[1] - b[0]*1e7 - b[1] })
			gotSpans := slices.Clone(e.Spans)
			slices.SortFunc(gotSpans, func(a, b [2]int) int { return a[0]*1e7 + a[1] - b[0]*1e7 - b[1] })
			require.Equal(t, want, gotSpans, "message %d", i)
		}
	}
	check(it.Messages, full.Request, true)
	require.Equal(t, len(full.Request.Messages), it.MessageCount)
	require.Equal(t, full.RedactedRequest != nil, it.HasProposal)
	if full.RedactedRequest != nil {
		check(it.Proposal, full.RedactedRequest, false)
		require.Equal(t, len(full.RedactedRequest.Messages), it.ProposalCount)
	}
}

// A page of the queue shows the tasks cut by the database: excerpts of the
// first messages (lengths in code points, as the matches' spans), the spans
// within them, the reasons without their matches; pages follow each other
// by position, both ways; a window of a task's text walks the whole of it.
func TestQueuePageCutsTasks(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		h := startHarness(t, db, nil)
		tn := h.newTenant("Acme", "", 0)
		other := h.newTenant("Globex", "", 0)
		long := "Project Falcon " + strings.Repeat("é😀 payroll ", 700) + " Project Falcon at the end"
		big := tn.submitMessages(t, tn.agent.ID,
			"system", "You are helpful.",
			"user", long,
			"assistant", "Noted: DE12345678901234567890 and Project Falcon.",
			"user", "A fourth message about Project Falcon.")
		require.Equal(t, spec.StatusRequiresIntervention, big.Status)
		require.NotNil(t, big.RedactedRequest, "the IBAN is redacted in the proposal")
		var waiting []spec.ReviewTask
		waiting = append(waiting, big)
		for range 4 {
			waiting = append(waiting, tn.submitTo(t, tn.agent.ID, "Project Falcon, short."))
		}
		tn.submitTo(t, tn.agent.ID, "Hello") // approved: not in the queue
		// The queue's order: oldest first, then by id.
		slices.SortFunc(waiting, func(a, b spec.ReviewTask) int {
			if c := a.CreatedAt.Compare(b.CreatedAt.Time); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
		theirs := other.submitTo(t, other.agent.ID, "Project Falcon of Globex")

		svc := h.service()
		ctx := t.Context()
		p1, err := svc.QueuePage(ctx, tn.org.ID, reviewapi.QueueQuery{Limit: 2, ExcerptChars: 100})
		require.NoError(t, err)
		require.Equal(t, 5, p1.Total)
		require.Zero(t, p1.Offset)
		require.Nil(t, p1.Prev)
		require.NotNil(t, p1.Next)
		require.Len(t, p1.Items, 2)
		for i, it := range p1.Items {
			requireSummary(t, it, waiting[i], 100, reviewapi.DefaultExcerptMessages)
		}

		p2, err := svc.QueuePage(ctx, tn.org.ID, reviewapi.QueueQuery{Limit: 2, After: p1.Next})
		require.NoError(t, err)
		require.Equal(t, 2, p2.Offset)
		require.Equal(t, p2.Items[0].Key(), *p2.Prev, "the previous page ends before this one's first task")
		require.Equal(t, []string{waiting[2].ID, waiting[3].ID}, []string{p2.Items[0].ID, p2.Items[1].ID})
		for i, it := range p2.Items {
			requireSummary(t, it, waiting[2+i], reviewapi.DefaultExcerptChars, reviewapi.DefaultExcerptMessages)
		}
		p3, err := svc.QueuePage(ctx, tn.org.ID, reviewapi.QueueQuery{Limit: 2, After: p2.Next})
		require.NoError(t, err)
		require.Len(t, p3.Items, 1)
		require.Nil(t, p3.Next)
		require.Equal(t, 4, p3.Offset)
		back, err := svc.QueuePage(ctx, tn.org.ID, reviewapi.QueueQuery{Limit: 2, Before: p3.Prev})
		require.NoError(t, err)
		require.Equal(t, p2.Items[0].ID, back.Items[0].ID)
		require.Equal(t, 2, back.Offset)
		back, err = svc.QueuePage(ctx, tn.org.ID, reviewapi.QueueQuery{Limit: 2, Before: back.Prev})
		require.NoError(t, err)
		require.Equal(t, p1.Items[0].ID, back.Items[0].ID)
		require.Nil(t, back.Prev)

		// Keys round-trip; anything else is invalid.
		k, err := reviewapi.ParseQueueKey(p1.Next.String())
		require.NoError(t, err)
		require.Equal(t, *p1.Next, k)
		for _, bad := range []string{"", "x", "1.", ".x", "-1." + big.ID, "12.not-a-uuid", "1e3." + big.ID} {
			_, err := reviewapi.ParseQueueKey(bad)
			require.ErrorIs(t, err, spec.ErrInvalid, bad)
		}
		_, err = svc.QueuePage(ctx, tn.org.ID, reviewapi.QueueQuery{Limit: reviewapi.MaxQueuePage + 1})
		require.ErrorIs(t, err, spec.ErrInvalid)

		// One task, in any state; another organisation's is unknown.
		one, err := svc.TaskSummary(ctx, tn.org.ID, big.ID, 50, 10, 3)
		require.NoError(t, err)
		requireSummary(t, one, big, 50, 10)
		require.True(t, one.Messages[1].Cut())
		require.Equal(t, 4, one.MessageCount)
		_, err = svc.TaskSummary(ctx, tn.org.ID, theirs.ID, 0, 0, 0)
		require.ErrorIs(t, err, reviewapi.ErrTaskNotFound)
		_, err = svc.MessageSizes(ctx, tn.org.ID, theirs.ID, false)
		require.ErrorIs(t, err, reviewapi.ErrTaskNotFound)
		_, err = svc.TaskText(ctx, tn.org.ID, theirs.ID, reviewapi.TextQuery{Chars: 10})
		require.ErrorIs(t, err, reviewapi.ErrTaskNotFound)

		// Windows of 333 characters walk the whole text, spans included.
		for _, redacted := range []bool{false, true} {
			req := big.Request
			if redacted {
				req = big.RedactedRequest
			}
			sizes, err := svc.MessageSizes(ctx, tn.org.ID, big.ID, redacted)
			require.NoError(t, err)
			require.Len(t, sizes, len(req.Messages))
			for i, m := range req.Messages {
				require.Equal(t, len([]rune(m.Content)), sizes[i])
				var b strings.Builder
				marked := map[int]bool{}
				for from := 0; from < sizes[i] || from == 0; from += 333 {
					win, err := svc.TaskText(ctx, tn.org.ID, big.ID, reviewapi.TextQuery{Redacted: redacted, First: i, Last: i, From: from, Chars: 333})
					require.NoError(t, err)
					require.Len(t, win, 1)
					require.Equal(t, from, win[0].Start)
					require.Equal(t, m.Role, win[0].Role)
					b.WriteString(win[0].Text)
					for _, sp := range win[0].Spans {
						for c := sp[0]; c < sp[1]; c++ {
							marked[from+c] = true
						}
					}
				}
				require.Equal(t, m.Content, b.String())
				if redacted {
					continue
				}
				want := map[int]bool{}
				for _, r := range big.Reasons {
					for _, sp := range r.Matches {
						if sp.MessageIndex == i {
							for c := sp.Start; c < sp.End; c++ {
								want[c] = true
							}
						}
					}
				}
				require.Equal(t, want, marked, "message %d", i)
			}
		}
		// A window across messages holds Chars characters in all.
		win, err := svc.TaskText(ctx, tn.org.ID, big.ID, reviewapi.TextQuery{First: 0, Last: 3, From: 5, Chars: 40})
		require.NoError(t, err)
		require.Len(t, win, 2)
		require.Equal(t, "re helpful.", win[0].Text)
		require.Equal(t, string([]rune(long)[:29]), win[1].Text)
		require.Zero(t, win[1].Start)
		_, err = svc.TaskText(ctx, tn.org.ID, big.ID, reviewapi.TextQuery{Chars: reviewapi.MaxTextChars + 1})
		require.ErrorIs(t, err, spec.ErrInvalid)
	})
}
