package telemetry

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/telemetry/tools"
	"github.com/aiusage/kit/spec"
)

// conversationNamespace derives the id of a conversation from its source,
// tool and session (a name-based UUID), so that every process finds the
// same conversation.
var conversationNamespace = uuid.MustParse("9b2e4f6a-1c3d-4e5f-8a7b-2d4c6e8f0a13")

// maxConversationWrites bounds how often one request writes a conversation
// again because prompts of it arrived meanwhile through another request.
const maxConversationWrites = 20

// beforeConversationSave, when set (by tests), is called before a
// conversation built from n prompts is written.
var beforeConversationSave atomic.Pointer[func(id string, n int)]

// ConversationID returns the id of the conversation that a prompt of tool
// and session belongs to in the telemetry source sourceID; a prompt
// without a session is a conversation of its own, by its key.
func ConversationID(sourceID, tool, session, key string) string {
	name := "session\x00" + sourceID + "\x00" + tool + "\x00" + session
	if session == "" {
		name = "prompt\x00" + sourceID + "\x00" + key
	}
	return uuid.NewSHA1(conversationNamespace, []byte(name)).String()
}

// savePrompts stores the prompts of a request sent with key p into source
// sid when p's organisation allows storing prompt text (read on every
// request that carries prompts, so a change applies to the next one), and
// writes the conversations they belong to into the source's collected
// view. When it does not, the prompts are dropped.
func (s *Service) savePrompts(ctx context.Context, p org.Principal, sid string, now time.Time, prompts []tools.Prompt) error {
	if len(prompts) == 0 {
		return nil
	}
	st, err := s.cfg.Orgs.TelemetrySettings(ctx, p.OrganisationID)
	if err != nil {
		return fmt.Errorf("telemetry: settings of organisation %s: %w", p.OrganisationID, err)
	}
	if !st.StorePrompts {
		return nil
	}
	convs := map[string]bool{}
	err = s.db.InTxRetry(ctx, func(tx *sql.Tx) error {
		for _, pr := range prompts {
			id := ConversationID(sid, pr.Tool, pr.SessionID, pr.Key)
			convs[id] = true
			at := pr.Time
			if at.IsZero() {
				at = now
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO telemetry_prompts (source_id, key, conversation_id, time_ms,
				tool, session_id, email, device, record, text) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
				ON CONFLICT (source_id, key) DO NOTHING`,
				sid, clean(pr.Key), id, at.UnixMilli(), clean(pr.Tool), clean(pr.SessionID), clean(pr.Email),
				clean(pr.Device), clean(pr.Source), clean(pr.Text)); err != nil {
				return fmt.Errorf("telemetry: prompt %s: %w", pr.Key, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(convs)) {
		if err := s.writeConversation(ctx, sid, id, now); err != nil {
			return err
		}
	}
	return nil
}

// clean makes s storable as text in both databases: valid UTF-8 without
// NUL characters (which PostgreSQL's text refuses), each replaced by U+FFFD.
func clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// writeConversation writes conversation id of source sid, built from its
// stored prompts, into the source's collected view. Another request may
// store a prompt of the same conversation meanwhile and write it too; the
// view keeps the record of the later updatedAt, the later write on a tie.
// So the conversation is written again until its prompts, read after the
// write, are those it was built from: whichever write comes last then
// holds every prompt stored before it.
func (s *Service) writeConversation(ctx context.Context, sid, id string, now time.Time) error {
	for range maxConversationWrites {
		ps, err := s.conversationPrompts(ctx, sid, id)
		if err != nil {
			return err
		}
		if len(ps) == 0 {
			return nil
		}
		if h := beforeConversationSave.Load(); h != nil {
			(*h)(id, len(ps))
		}
		raw, err := json.Marshal(conversationOf(id, ps))
		if err != nil {
			return fmt.Errorf("telemetry: conversation %s: %w", id, err)
		}
		if err := s.savePushed(ctx, sid, consumer.Conversations, []json.RawMessage{raw}, now); err != nil {
			return err
		}
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM telemetry_prompts WHERE source_id = $1 AND conversation_id = $2`,
			sid, id).Scan(&n); err != nil {
			return fmt.Errorf("telemetry: conversation %s: %w", id, err)
		}
		// Prompts are never removed: the same count is the same prompts.
		if n == len(ps) {
			return nil
		}
	}
	return fmt.Errorf("telemetry: conversation %s: still changing after %d writes", id, maxConversationWrites)
}

// storedPrompt is a row of telemetry_prompts.
type storedPrompt struct {
	key, tool, session, email, device, text string
	at                                      time.Time
}

// conversationPrompts returns the prompts of conversation id of source
// sid in time order, then by key.
func (s *Service) conversationPrompts(ctx context.Context, sid, id string) ([]storedPrompt, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT key, time_ms, tool, session_id, email, device, text FROM telemetry_prompts
		WHERE source_id = $1 AND conversation_id = $2 ORDER BY time_ms, key`, sid, id)
	if err != nil {
		return nil, fmt.Errorf("telemetry: conversation %s: %w", id, err)
	}
	defer rows.Close()
	var out []storedPrompt
	for rows.Next() {
		var p storedPrompt
		var ms int64
		if err := rows.Scan(&p.key, &ms, &p.tool, &p.session, &p.email, &p.device, &p.text); err != nil {
			return nil, fmt.Errorf("telemetry: conversation %s: %w", id, err)
		}
		p.at = time.UnixMilli(ms).UTC()
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("telemetry: conversation %s: %w", id, err)
	}
	return out, nil
}

// conversationMeta is the metadata of a telemetry conversation.
type conversationMeta struct {
	Transport string `json:"transport"`
	Tool      string `json:"tool,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	Device    string `json:"device,omitempty"`
}

// conversationOf builds conversation id from its prompts ps (at least one,
// in time order): a user message per prompt, the person from the first
// prompt that names one, the tool as the assistant, startedAt the first
// prompt's time and updatedAt the last's. The same prompts give the same
// record, whatever order they arrived in.
func conversationOf(id string, ps []storedPrompt) spec.Conversation {
	first := ps[0]
	c := spec.Conversation{ID: id, ConversationID: first.session, StartedAt: spec.NewTime(first.at),
		UpdatedAt: spec.NewTime(ps[len(ps)-1].at)}
	var email, device string
	for _, p := range ps {
		if email == "" {
			email = p.email
		}
		if device == "" {
			device = p.device
		}
		c.Messages = append(c.Messages, spec.Message{ID: p.key, Role: spec.RoleUser, Content: p.text, CreatedAt: spec.NewTime(p.at)})
	}
	// The person as the usage buckets name it (userId): the email, else
	// the device's label.
	switch {
	case email != "":
		c.User = &spec.User{ID: email, Email: email}
	case device != "":
		c.User = &spec.User{ID: "device:" + device}
	}
	if first.tool != "" {
		c.Assistant = &spec.AssistantRef{ID: first.tool, Name: first.tool}
	}
	meta, err := json.Marshal(conversationMeta{Transport: "telemetry", Tool: first.tool, SessionID: first.session, Device: device})
	if err == nil {
		c.Metadata = meta
	}
	return c
}
