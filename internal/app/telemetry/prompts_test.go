package telemetry_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/app/telemetry"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// promptRec is one Claude Code user_prompt event.
type promptRec struct {
	session string // "" for none
	seq     int64
	at      time.Time
	text    string
}

var t0 = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// claudePrompts is a logs export of Claude Code, with OTEL_LOG_USER_PROMPTS
// set, by the person email, holding recs.
func claudePrompts(email string, recs ...promptRec) *collogspb.ExportLogsServiceRequest {
	var lrs []*logspb.LogRecord
	for _, r := range recs {
		attrs := []*commonpb.KeyValue{str("event.name", "user_prompt"), str("event.timestamp", r.at.Format("2006-01-02T15:04:05.000Z")),
			str("user.email", email), str("prompt", r.text), str("prompt_length", fmt.Sprint(len(r.text)))}
		if r.session != "" {
			attrs = append(attrs, str("session.id", r.session),
				&commonpb.KeyValue{Key: "event.sequence", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: r.seq}}})
		}
		lrs = append(lrs, &logspb.LogRecord{TimeUnixNano: uint64(r.at.UnixNano()),
			Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "claude_code.user_prompt"}}, Attributes: attrs})
	}
	return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "claude-code"), str("service.version", "2.1.0")}},
		ScopeLogs: []*logspb.ScopeLogs{{LogRecords: lrs}},
	}}}
}

// postLogs sends m to /v1/logs as protobuf with the Ingestion key secret
// and requires a 200.
func postLogs(t *testing.T, base, secret string, m *collogspb.ExportLogsServiceRequest) {
	t.Helper()
	body, err := proto.Marshal(m)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/logs", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
}

// conversations returns the organisation-wide conversations, by id.
func (e *env) conversations(t *testing.T) map[string]spec.Conversation {
	t.Helper()
	out := map[string]spec.Conversation{}
	for _, raw := range e.orgList(t, "conversations") {
		var c spec.Conversation
		require.NoError(t, json.Unmarshal(raw, &c))
		out[c.ID] = c
	}
	return out
}

// noQuarantine requires that the key's source quarantined nothing.
func (e *env) noQuarantine(t *testing.T) {
	t.Helper()
	var q []consumer.Quarantine
	require.NoError(t, e.srv.Sources().Store().Quarantined(t.Context(), telemetry.SourceID(e.ingest.ID), func(r consumer.Quarantine) error {
		q = append(q, r)
		return nil
	}))
	require.Empty(t, q)
}

func (e *env) storedPrompts(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, e.db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM telemetry_prompts`).Scan(&n))
	return n
}

func contents(c spec.Conversation) []string {
	var out []string
	for _, m := range c.Messages {
		out = append(out, m.Content)
	}
	return out
}

var fixturesWithPrompts = []string{"claude_logs.json", "gemini_logs.json", "genai_traces.json", "codex_logs.json"}

// TestPromptsOff: by default prompt text is dropped: no conversation, no
// stored prompt, the totals as without prompts.
func TestPromptsOff(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		e := newEnv(t, db, nil)
		for _, n := range fixturesWithPrompts {
			code, body := post(t, e.url, n, n == "genai_traces.json", bearer(e.ingest.Secret))
			require.Equal(t, http.StatusOK, code, string(body))
		}
		postLogs(t, e.url, e.ingest.Secret, claudePrompts("ann@example.com", promptRec{"s-a", 1, t0, "hello"}))
		require.NoError(t, e.srv.Telemetry().RollupAll(t.Context()))
		require.Empty(t, e.orgList(t, "conversations"))
		require.Zero(t, e.storedPrompts(t))
		got, want := e.orgUsage(t), reference(t, fixturesWithPrompts...)
		require.InDelta(t, want.Cost, got.Cost, 1e-9)
		got.Cost, want.Cost = 0, 0
		require.Equal(t, want, got)
	})
}

// TestPromptsOn: with the setting on, each tool session is one
// conversation of its prompts in time order, whatever order and however
// often they arrive; a prompt without a session is one of its own. Turning
// the setting off stops storing; what was stored stays.
func TestPromptsOn(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db, nil)
		_, err := e.orgs.SetStorePrompts(ctx, e.org.ID, true, admin)
		require.NoError(t, err)
		sid := telemetry.SourceID(e.ingest.ID)
		p1 := promptRec{"s-a", 1, t0, "first: explain the build"}
		p2 := promptRec{"s-a", 4, t0.Add(time.Minute), "second\nwith a newline and \x00 a NUL"}
		p3 := promptRec{"s-a", 9, t0.Add(2*time.Hour + 123*time.Millisecond), "third ✓"}
		lone := promptRec{"", 0, t0.Add(time.Hour), "no session"}
		batches := []*collogspb.ExportLogsServiceRequest{
			claudePrompts("ann@example.com", p3),
			claudePrompts("ann@example.com", p2, lone),
			claudePrompts("ann@example.com", p1, p3),
		}
		for _, b := range batches {
			postLogs(t, e.url, e.ingest.Secret, b)
		}
		for _, n := range fixturesWithPrompts {
			code, body := post(t, e.url, n, true, bearer(e.ingest.Secret))
			require.Equal(t, http.StatusOK, code, string(body))
		}
		e.noQuarantine(t)
		convs := e.conversations(t)
		// s-a, the lone prompt, and one each of Claude Code's s1, Gemini's
		// g-1 and the GenAI conv-7 (Codex's prompt is redacted).
		require.Len(t, convs, 5)
		sa, ok := convs[telemetry.ConversationID(sid, "claude-code", "s-a", "")]
		require.True(t, ok)
		require.Equal(t, []string{p1.text, "second\nwith a newline and \uFFFD a NUL", p3.text}, contents(sa))
		require.Equal(t, "s-a", sa.ConversationID)
		require.True(t, sa.StartedAt.Equal(p1.at), sa.StartedAt.String())
		require.True(t, sa.UpdatedAt.Equal(p3.at), sa.UpdatedAt.String())
		require.Equal(t, &spec.User{ID: "ann@example.com", Email: "ann@example.com"}, sa.User)
		require.Equal(t, &spec.AssistantRef{ID: "claude-code", Name: "claude-code"}, sa.Assistant)
		for i, m := range sa.Messages {
			require.Equal(t, spec.RoleUser, m.Role)
			require.True(t, m.CreatedAt.Equal([]time.Time{p1.at, p2.at, p3.at}[i]))
			require.NotEmpty(t, m.ID)
		}
		var lones []spec.Conversation
		for _, c := range convs {
			if c.ConversationID == "" {
				lones = append(lones, c)
			}
		}
		require.Len(t, lones, 1)
		require.Equal(t, []string{lone.text}, contents(lones[0]))
		g := convs[telemetry.ConversationID(sid, "gemini-cli", "g-1", "")]
		require.Equal(t, []string{"Explain this."}, contents(g))
		require.Equal(t, "erin@example.com", g.User.Email)

		// Everything again, reversed, twice: the same records.
		before := e.orgList(t, "conversations")
		for range 2 {
			for i := len(batches) - 1; i >= 0; i-- {
				postLogs(t, e.url, e.ingest.Secret, batches[i])
			}
			for _, n := range fixturesWithPrompts {
				// The traces fixture's ids are base64, as protojson has them:
				// it is sent as protobuf.
				code, _ := post(t, e.url, n, n == "genai_traces.json", bearer(e.ingest.Secret))
				require.Equal(t, http.StatusOK, code)
			}
		}
		require.Equal(t, before, e.orgList(t, "conversations"))
		require.Equal(t, 7, e.storedPrompts(t))
		require.NoError(t, e.srv.Telemetry().RollupAll(ctx))
		got, want := e.orgUsage(t), reference(t, fixturesWithPrompts...)
		got.Cost, want.Cost = 0, 0
		require.Equal(t, want, got, "prompts change no usage")

		// Off: a new prompt is dropped; what was stored stays.
		_, err = e.orgs.SetStorePrompts(ctx, e.org.ID, false, admin)
		require.NoError(t, err)
		postLogs(t, e.url, e.ingest.Secret, claudePrompts("ann@example.com", promptRec{"s-a", 12, t0.Add(3 * time.Hour), "after off"}))
		require.Equal(t, before, e.orgList(t, "conversations"))
		require.Equal(t, 7, e.storedPrompts(t))
		e.noQuarantine(t)
	})
}

// TestPromptsTwoProcesses: two service instances on one PostgreSQL
// database receive the prompts of one session at once, each prompt from
// both and in different orders: one conversation holds each prompt once,
// in time order.
func TestPromptsTwoProcesses(t *testing.T) {
	t.Parallel()
	u := sqldbtest.URL(t, sqldb.Postgres)
	open := func() *sqldb.DB {
		db, err := sqldb.Open(t.Context(), u)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	a := newEnv(t, open(), nil)
	b := newEnv(t, open(), &a.org)
	b.api, b.ingest = a.api, a.ingest
	_, err := a.orgs.SetStorePrompts(t.Context(), a.org.ID, true, admin)
	require.NoError(t, err)
	const n = 24
	var recs []promptRec
	for i := range n {
		recs = append(recs, promptRec{"s-busy", int64(i + 1), t0.Add(time.Duration(i) * time.Second), fmt.Sprintf("prompt %02d", i)})
	}
	var wg sync.WaitGroup
	for w, e := range []*env{a, b, a, b, a, b} {
		order := slices.Clone(recs)
		switch w % 3 {
		case 1:
			slices.Reverse(order)
		case 2:
			order = append(order[n/2:], order[:n/2]...)
		}
		wg.Go(func() {
			for _, r := range order {
				postLogs(t, e.url, a.ingest.Secret, claudePrompts("ann@example.com", r))
			}
		})
	}
	wg.Wait()
	convs := a.conversations(t)
	require.Len(t, convs, 1)
	c := convs[telemetry.ConversationID(telemetry.SourceID(a.ingest.ID), "claude-code", "s-busy", "")]
	var want []string
	for _, r := range recs {
		want = append(want, r.text)
	}
	require.Equal(t, want, contents(c))
	ids := map[string]bool{}
	for _, m := range c.Messages {
		require.False(t, ids[m.ID], "message %s twice", m.ID)
		ids[m.ID] = true
	}
	a.noQuarantine(t)
}

// TestPromptsInterleaved: a request that built a session's conversation
// before another request stored an earlier prompt of it, and writes it
// after that one, does not leave the conversation without that prompt.
//
// Its hook is one for the package: the databases run one after the other
// (in parallel, one's hook replaced the other's, whose request then ended
// without waiting: it failed so in CI's race phase).
func TestPromptsInterleaved(t *testing.T) {
	for _, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) { testPromptsInterleaved(t, sqldbtest.Open(t, d)) })
	}
}

func testPromptsInterleaved(t *testing.T, db *sqldb.DB) {
	e := newEnv(t, db, nil)
	_, err := e.orgs.SetStorePrompts(t.Context(), e.org.ID, true, admin)
	require.NoError(t, err)
	id := telemetry.ConversationID(telemetry.SourceID(e.ingest.ID), "claude-code", "s-x", "")
	reached, release := make(chan struct{}), make(chan struct{})
	var released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	t.Cleanup(free) // before the service stops, so no handler waits on it
	var once sync.Once
	telemetry.SetBeforeConversationSave(func(cid string, n int) {
		if cid == id && n == 1 {
			once.Do(func() {
				close(reached)
				<-release
			})
		}
	})
	t.Cleanup(func() { telemetry.SetBeforeConversationSave(nil) })
	late := promptRec{"s-x", 2, t0.Add(time.Minute), "later prompt"}
	early := promptRec{"s-x", 1, t0, "earlier prompt"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		postLogs(t, e.url, e.ingest.Secret, claudePrompts("ann@example.com", late))
	}()
	// A request that ends without reaching the hook (a refused request
	// fails the test from its goroutine) must fail the test, not hang it.
	select {
	case <-reached:
	case <-done:
		t.Fatal("the first request ended before it wrote the conversation")
	case <-time.After(time.Minute):
		t.Fatal("the first request did not reach the conversation's write within a minute")
	}
	postLogs(t, e.url, e.ingest.Secret, claudePrompts("ann@example.com", early))
	free()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the first request did not finish within a minute after it was released")
	}
	require.Equal(t, []string{early.text, late.text}, contents(e.conversations(t)[id]))
}
