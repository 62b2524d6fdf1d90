package webui

import (
	"context"
	"database/sql"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strings"
	"time"
)

// Schema is the DDL of the Open WebUI v0.9.0 tables the Source reads,
// written by hand from the release's documented column list. It runs on
// SQLite and on PostgreSQL.
//
//go:embed schema.sql
var Schema string

// SampleConfig shapes the sample database.
type SampleConfig struct {
	// End is when the sample's activity ends; it spans the seven days
	// before. The default is the current hour.
	End time.Time
	// Chats is the number of generated chats beside the hand-written ones
	// (branches, edits, multi-model answers, archived, deleted, in progress,
	// legacy JSON). The default is 60.
	Chats int
}

// EnsureSample creates the sample database at dsn (see [OpenDB]) unless one
// is there: a SQLite file that exists, or a PostgreSQL schema with a chat
// table. It reports whether it created one. A SQLite file it fails to fill
// is removed.
func EnsureSample(ctx context.Context, dsn string) (bool, error) {
	pg := strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
	if !pg {
		if _, err := os.Stat(dsn); err == nil {
			return false, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("webui: sample: %w", err)
		}
	}
	db, d, err := OpenDB(ctx, dsn, false)
	if err != nil {
		return false, err
	}
	defer db.Close()
	if pg {
		var n int
		err := db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables
			WHERE table_schema = current_schema() AND table_name = 'chat'`).Scan(&n)
		if err != nil {
			return false, fmt.Errorf("webui: sample: look for a chat table: %w", err)
		}
		if n > 0 {
			return false, nil
		}
	}
	if err := CreateSample(ctx, db, d, SampleConfig{}); err != nil {
		if !pg {
			_ = db.Close()
			_ = os.Remove(dsn)
		}
		return false, err
	}
	return true, nil
}

// CreateSample creates Open WebUI's tables in db, an empty database of
// dialect d, and fills them with a realistic data set: users in groups,
// custom models over several base models, tools, chats whose message trees
// hold regenerations, edits and multi-model answers, archived and deleted
// chats, an attachment, feedback, and token usage in the OpenAI, Ollama and
// normalised forms Open WebUI stores.
func CreateSample(ctx context.Context, db *sql.DB, d Dialect, cfg SampleConfig) error {
	if cfg.End.IsZero() {
		cfg.End = time.Now().UTC().Truncate(time.Hour)
	}
	if cfg.Chats == 0 {
		cfg.Chats = 60
	}
	s := &Source{db: db, dialect: d, tenant: "sample"}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("webui: sample: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, stmt := range strings.Split(stripComments(Schema), ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("webui: sample: create tables: %w", err)
		}
	}
	w := &sampleWriter{ctx: ctx, tx: tx, s: s, end: cfg.End.UTC(), rng: rand.New(rand.NewPCG(21, 7))}
	w.fill(cfg.Chats)
	if w.err != nil {
		return fmt.Errorf("webui: sample: %w", w.err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("webui: sample: %w", err)
	}
	return nil
}

func stripComments(stmt string) string {
	var keep []string
	for _, l := range strings.Split(stmt, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// sampleWriter inserts the sample rows, keeping the first error.
type sampleWriter struct {
	ctx context.Context
	tx  *sql.Tx
	s   *Source
	end time.Time
	rng *rand.Rand
	err error
}

func (w *sampleWriter) exec(q string, args ...any) {
	if w.err != nil {
		return
	}
	if _, err := w.tx.ExecContext(w.ctx, w.s.rebind(q), args...); err != nil {
		w.err = fmt.Errorf("%s: %w", strings.Fields(q)[2], err)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps and slices of plain values are marshalled
	}
	return string(b)
}

// at is the sample's clock: the given hours before its end, in seconds.
func (w *sampleWriter) at(hoursBefore float64) int64 {
	return w.end.Add(-time.Duration(hoursBefore * float64(time.Hour))).Unix()
}

type sampleUser struct{ id, name, email, role, department, group string }

var sampleUsers = []sampleUser{
	{"u-alice", "Alice Admin", "alice@example.com", "admin", "IT", "grp-eng"},
	{"u-bob", "Bob Builder", "bob@example.com", "user", "Engineering", "grp-eng"},
	{"u-carol", "Carol Counsel", "carol@example.com", "user", "Legal", "grp-legal"},
	{"u-dave", "Dave Desk", "dave@example.com", "user", "Support", "grp-support"},
	{"u-erin", "Erin External", "erin@example.com", "user", "", ""},
}

// baseModels are models served by connections (OpenAI, Ollama): Open WebUI
// has no rows for them unless an administrator overrides their settings.
var baseModels = []string{"gpt-4o", "gpt-4o-mini", "llama3.1:8b", "qwen2.5:14b"}

func (w *sampleWriter) fill(chats int) {
	groups := map[string]string{"grp-eng": "Engineering", "grp-legal": "Legal", "grp-support": "Support"}
	for id, name := range groups {
		w.exec(`INSERT INTO "group" (id, user_id, name, description, data, meta, permissions, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, id, "u-alice", name, name+" team", "{}", "{}", "{}", w.at(200), w.at(200))
	}
	for i, u := range sampleUsers {
		info := "{}"
		if u.department != "" {
			info = mustJSON(map[string]any{"department": u.department})
		}
		created := w.at(190 - float64(i))
		w.exec(`INSERT INTO "user" (id, username, name, email, role, profile_image_url, last_active_at, updated_at, created_at, settings, info)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			u.id, strings.TrimPrefix(u.id, "u-"), u.name, u.email, u.role, "/user.png", w.at(1), created, created, `{"ui":{}}`, info)
		w.exec(`INSERT INTO auth (id, email, password, active) VALUES (?, ?, ?, ?)`, u.id, u.email, "$2b$12$sample-hash-not-a-password", true)
		if u.group != "" {
			w.exec(`INSERT INTO group_member (id, group_id, user_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
				"gm-"+u.id, u.group, u.id, created, created)
		}
	}
	// Bob is in a second group.
	w.exec(`INSERT INTO group_member (id, group_id, user_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
		"gm-u-bob-2", "grp-support", "u-bob", w.at(150), w.at(150))

	w.exec(`INSERT INTO tool (id, user_id, name, content, specs, meta, valves, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		"web_search_tool", "u-alice", "Web Search", "class Tools: ...", `[{"name":"search","parameters":{}}]`, `{"description":"Searches the web"}`, "{}", w.at(180), w.at(180))
	w.exec(`INSERT INTO tool (id, user_id, name, content, specs, meta, valves, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		"jira_lookup", "u-bob", "Jira lookup", "class Tools: ...", `[{"name":"get_issue","parameters":{}}]`, `{"description":"Reads Jira issues"}`, "{}", w.at(170), w.at(170))
	w.exec(`INSERT INTO knowledge (id, user_id, name, description, data, meta, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		"kb-contracts", "u-carol", "Contract templates", "Approved templates", "{}", "{}", w.at(175), w.at(175))

	type model struct {
		id, owner, base, name, system string
		params                        map[string]any
		meta                          map[string]any
		active                        bool
		created, updated              float64
		grants                        [][2]string // principal type, id
	}
	models := []model{
		{"contract-reviewer", "u-carol", "gpt-4o", "Contract Reviewer", "You review contracts for the legal team. Cite clauses.",
			map[string]any{"temperature": 0.2, "max_tokens": 2048}, map[string]any{"description": "Reviews NDAs and MSAs", "toolIds": []string{"web_search_tool"},
				"knowledge":    []map[string]any{{"id": "kb-contracts", "name": "Contract templates", "type": "collection"}},
				"capabilities": map[string]bool{"vision": true, "citations": true, "image_generation": false}},
			true, 160, 20, [][2]string{{"group", "grp-legal"}}},
		{"support-helper", "u-dave", "llama3.1:8b", "Support Helper", "Answer customer tickets politely.",
			map[string]any{"temperature": 0.7, "top_p": 0.9, "num_ctx": 8192}, map[string]any{"description": "Drafts ticket replies", "toolIds": []string{"jira_lookup"}},
			true, 150, 150, [][2]string{{"user", "*"}}},
		{"sql-buddy", "u-bob", "qwen2.5:14b", "SQL Buddy", "You write PostgreSQL.",
			map[string]any{"temperature": 0}, map[string]any{"description": "Writes queries"}, true, 150, 150, nil},
		{"old-translator", "u-alice", "gpt-4o-mini", "Old Translator", "Translate to French.",
			map[string]any{}, map[string]any{"description": "Retired"}, false, 180, 100, [][2]string{{"user", "u-erin"}}},
	}
	for _, m := range models {
		params := map[string]any{"system": m.system}
		for k, v := range m.params {
			params[k] = v
		}
		w.exec(`INSERT INTO model (id, user_id, base_model_id, name, params, meta, is_active, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			m.id, m.owner, m.base, m.name, mustJSON(params), mustJSON(m.meta), m.active, w.at(m.created), w.at(m.updated))
		for i, g := range m.grants {
			w.exec(`INSERT INTO access_grant (id, resource_type, resource_id, principal_type, principal_id, permission) VALUES (?, ?, ?, ?, ?, ?)`,
				fmt.Sprintf("ag-%s-%d", m.id, i), "model", m.id, g[0], g[1], "read")
		}
	}
	// A row without a base model only overrides a connection model's
	// settings: it is not an assistant.
	w.exec(`INSERT INTO model (id, user_id, base_model_id, name, params, meta, is_active, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		"gpt-4o", "u-alice", nil, "GPT-4o", `{"temperature":0.5}`, `{"description":"OpenAI flagship"}`, true, w.at(185), w.at(185))

	w.handWritten()
	w.generated(chats)
}

// tree builds a chat.chat document.
type tree struct {
	msgs    map[string]map[string]any
	order   []string
	current string
}

func newTree() *tree { return &tree{msgs: map[string]map[string]any{}} }

// add adds a message under parent ("" for a root) and returns its id.
func (t *tree) add(id, parent, role, content string, ts int64, extra map[string]any) string {
	m := map[string]any{"id": id, "role": role, "content": content, "timestamp": ts, "childrenIds": []string{}}
	if parent == "" {
		m["parentId"] = nil
	} else {
		m["parentId"] = parent
		p := t.msgs[parent]
		p["childrenIds"] = append(p["childrenIds"].([]string), id)
	}
	for k, v := range extra {
		m[k] = v
	}
	t.msgs[id] = m
	t.order = append(t.order, id)
	t.current = id
	return id
}

func (t *tree) doc(id, title string, models []string, startedMs int64, params map[string]any) string {
	// messages is the linear copy of the visible branch, as older clients
	// kept it.
	var linear []map[string]any
	for cur := t.current; cur != ""; {
		m := t.msgs[cur]
		linear = append([]map[string]any{m}, linear...)
		p, _ := m["parentId"].(string)
		cur = p
	}
	if params == nil {
		params = map[string]any{}
	}
	return mustJSON(map[string]any{
		"id": "", "title": title, "models": models, "params": params, "system": "",
		"history":  map[string]any{"messages": t.msgs, "currentId": t.current},
		"messages": linear, "tags": []string{}, "timestamp": startedMs, "files": []any{},
	})
}

func (w *sampleWriter) insertChat(id, user, title, doc string, created, updated int64, archived bool, meta string) {
	w.exec(`INSERT INTO chat (id, user_id, title, chat, created_at, updated_at, archived, pinned, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, user, title, doc, created, updated, archived, false, meta)
}

func openaiUsage(in, out int) map[string]any {
	return map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out,
		"prompt_tokens_details": map[string]any{"cached_tokens": 0}}
}

func normalisedUsage(in, out int, cost float64) map[string]any {
	u := map[string]any{"input_tokens": in, "output_tokens": out, "total_tokens": in + out, "prompt_tokens": in, "completion_tokens": out}
	if cost > 0 {
		u["cost"] = cost
	}
	return u
}

func ollamaInfo(in, out int) map[string]any {
	return map[string]any{"usage": map[string]any{"prompt_eval_count": in, "eval_count": out, "total_duration": 2_400_000_000,
		"eval_duration": 1_900_000_000, "response_token/s": 41.5}}
}

// handWritten adds the chats the README and the mapping tests talk about.
func (w *sampleWriter) handWritten() {
	// A regenerated answer, then a follow-up on the regenerated branch.
	t0 := w.at(30)
	t := newTree()
	t.add("m-br-u1", "", "user", "How do I rotate a Postgres password?", t0, map[string]any{"models": []string{"gpt-4o"}})
	t.add("m-br-a1", "m-br-u1", "assistant", "Use ALTER ROLE ... PASSWORD.", t0+4,
		map[string]any{"model": "gpt-4o", "modelName": "GPT-4o", "modelIdx": 0, "done": true, "usage": openaiUsage(40, 12)})
	t.add("m-br-a2", "m-br-u1", "assistant", "Run ALTER ROLE name WITH PASSWORD 'new'; then update clients.", t0+60,
		map[string]any{"model": "gpt-4o", "modelName": "GPT-4o", "modelIdx": 0, "done": true, "usage": normalisedUsage(40, 25, 0.0004)})
	t.add("m-br-u2", "m-br-a2", "user", "And without downtime?", t0+120, nil)
	t.add("m-br-a3", "m-br-u2", "assistant", "Create a second role, switch clients, drop the first.", t0+125,
		map[string]any{"model": "gpt-4o", "modelName": "GPT-4o", "modelIdx": 0, "done": true, "usage": normalisedUsage(90, 30, 0.0009)})
	w.insertChat("chat-branches", "u-bob", "Rotate a password", t.doc("chat-branches", "Rotate a password", []string{"gpt-4o"}, t0*1000, nil),
		t0, t0+125, false, `{"tags":["postgres","ops"]}`)

	// An edited question: the edit is a sibling of the original.
	t0 = w.at(28)
	t = newTree()
	t.add("m-ed-u1", "", "user", "Wrte a haiku", t0, nil)
	t.add("m-ed-a1", "m-ed-u1", "assistant", "Wrte? Do you mean write?", t0+3,
		map[string]any{"model": "llama3.1:8b", "modelName": "llama3.1:8b", "modelIdx": 0, "done": true, "info": ollamaInfo(10, 8)})
	t.add("m-ed-u1e", "", "user", "Write a haiku about autumn", t0+40, nil)
	t.add("m-ed-a1e", "m-ed-u1e", "assistant", "Leaves let go of light / ...", t0+44,
		map[string]any{"model": "llama3.1:8b", "modelName": "llama3.1:8b", "modelIdx": 0, "done": true, "info": ollamaInfo(14, 17)})
	w.insertChat("chat-edited", "u-erin", "Autumn haiku", t.doc("chat-edited", "Autumn haiku", []string{"llama3.1:8b"}, t0*1000, map[string]any{"temperature": 0.9}),
		t0, t0+44, false, `{}`)

	// Two models answering side by side.
	t0 = w.at(26)
	t = newTree()
	t.add("m-mm-u1", "", "user", "Summarise RFC 9110 in one line.", t0, nil)
	t.add("m-mm-a2", "m-mm-u1", "assistant", "HTTP semantics, all versions.", t0+5,
		map[string]any{"model": "llama3.1:8b", "modelIdx": 1, "done": true, "info": ollamaInfo(20, 9)})
	t.add("m-mm-a1", "m-mm-u1", "assistant", "RFC 9110 defines HTTP's semantics independent of version.", t0+3,
		map[string]any{"model": "gpt-4o-mini", "modelIdx": 0, "done": true, "usage": openaiUsage(20, 14)})
	w.insertChat("chat-multimodel", "u-bob", "RFC 9110", t.doc("chat-multimodel", "RFC 9110", []string{"gpt-4o-mini", "llama3.1:8b"}, t0*1000, nil),
		t0, t0+5, false, `{}`)

	// A chat with a custom model, an attachment, pinned, in a folder, shared.
	t0 = w.at(24)
	t = newTree()
	t.add("m-as-u1", "", "user", "Review the attached NDA.", t0, map[string]any{"files": []map[string]any{{"type": "file", "id": "file-nda"}}})
	t.add("m-as-a1", "m-as-u1", "assistant", "Clause 4 lacks a term; clause 9 is one-sided.", t0+9,
		map[string]any{"model": "contract-reviewer", "modelName": "Contract Reviewer", "modelIdx": 0, "done": true, "usage": normalisedUsage(1800, 220, 0.0112)})
	w.exec(`INSERT INTO chat (id, user_id, title, chat, created_at, updated_at, share_id, archived, pinned, meta, folder_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		"chat-assistant", "u-carol", "NDA review", t.doc("chat-assistant", "NDA review", []string{"contract-reviewer"}, t0*1000, nil),
		t0, t0+9, "share-nda", false, true, `{"tags":["legal"]}`, "folder-legal")
	w.exec(`INSERT INTO file (id, user_id, hash, filename, path, data, meta, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		"file-nda", "u-carol", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "acme-nda.pdf", "/app/backend/data/uploads/file-nda_acme-nda.pdf",
		`{"status":"completed"}`, `{"name":"acme-nda.pdf","content_type":"application/pdf","size":48213}`, t0-10, t0-10)
	w.exec(`INSERT INTO chat_file (id, user_id, chat_id, file_id, message_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		"cf-nda", "u-carol", "chat-assistant", "file-nda", "m-as-u1", t0, t0)
	// The copy that releases before the shared_chat table kept for a share
	// link: owned by the pseudo-user "shared-<chat id>". Not a conversation.
	w.insertChat("share-nda", "shared-chat-assistant", "NDA review", t.doc("share-nda", "NDA review", []string{"contract-reviewer"}, t0*1000, nil),
		t0, t0+9, false, `{}`)

	// An archived chat.
	t0 = w.at(100)
	t = newTree()
	t.add("m-ar-u1", "", "user", "Draft an out-of-office note.", t0, nil)
	t.add("m-ar-a1", "m-ar-u1", "assistant", "I am away until Monday.", t0+2,
		map[string]any{"model": "gpt-4o-mini", "done": true, "usage": openaiUsage(15, 9)})
	w.insertChat("chat-archived", "u-dave", "Out of office", t.doc("chat-archived", "Out of office", []string{"gpt-4o-mini"}, t0*1000, nil),
		t0, t0+3600, true, `{}`)

	// An answer still streaming.
	t0 = w.at(2)
	t = newTree()
	t.add("m-ip-u1", "", "user", "Explain vacuum in detail.", t0, nil)
	t.add("m-ip-a1", "m-ip-u1", "assistant", "VACUUM reclaims", t0+1,
		map[string]any{"model": "sql-buddy", "modelIdx": 0, "done": false})
	w.insertChat("chat-in-progress", "u-bob", "Vacuum", t.doc("chat-in-progress", "Vacuum", []string{"sql-buddy"}, t0*1000, nil),
		t0, t0+1, false, `{}`)

	// A chat from an old client: no tree, only the linear list, Ollama counts
	// directly in info, and message timestamps in milliseconds.
	t0 = w.at(60)
	legacy := mustJSON(map[string]any{
		"title": "Old chat", "models": []string{"llama3.1:8b"}, "timestamp": t0 * 1000,
		"messages": []map[string]any{
			{"id": "m-lg-u1", "role": "user", "content": "ping", "timestamp": t0 * 1000},
			{"id": "m-lg-a1", "parentId": "m-lg-u1", "role": "assistant", "content": "pong", "model": "llama3.1:8b", "done": true,
				"timestamp": (t0 + 1) * 1000, "info": map[string]any{"prompt_eval_count": 5, "eval_count": 2}},
		},
	})
	w.insertChat("chat-legacy", "u-alice", "Old chat", legacy, t0, t0+1, false, `{}`)

	// Deleted chats: Open WebUI deletes the rows, keeping no tombstone. The
	// feedback given on one of them stays.
	for i, id := range []string{"chat-deleted-1", "chat-deleted-2"} {
		t0 = w.at(80 - float64(i))
		t = newTree()
		t.add("m-del-u-"+id, "", "user", "Something later regretted.", t0, nil)
		t.add("m-del-a-"+id, "m-del-u-"+id, "assistant", "Noted.", t0+1, map[string]any{"model": "gpt-4o", "done": true, "usage": openaiUsage(9, 2)})
		w.insertChat(id, "u-erin", "Deleted", t.doc(id, "Deleted", []string{"gpt-4o"}, t0*1000, nil), t0, t0+1, false, `{}`)
	}
	w.exec(`DELETE FROM chat_file WHERE chat_id IN (?, ?)`, "chat-deleted-1", "chat-deleted-2")
	w.exec(`DELETE FROM chat WHERE id IN (?, ?)`, "chat-deleted-1", "chat-deleted-2")

	w.feedback("fb-1", "u-bob", 1, "gpt-4o", "chat-branches", "m-br-a2", "Accurate", w.at(29))
	w.feedback("fb-2", "u-bob", -1, "gpt-4o", "chat-branches", "m-br-a1", "Too short", w.at(29))
	w.feedback("fb-3", "u-carol", 1, "contract-reviewer", "chat-assistant", "m-as-a1", "Found the issue", w.at(23))
	w.feedback("fb-4", "u-erin", -1, "gpt-4o", "chat-deleted-1", "m-del-a-chat-deleted-1", "Wrong", w.at(79.5))
}

func (w *sampleWriter) feedback(id, user string, rating int, model, chat, msg, reason string, at int64) {
	w.exec(`INSERT INTO feedback (id, user_id, version, type, data, meta, snapshot, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, user, 0, "rating",
		mustJSON(map[string]any{"rating": rating, "model_id": model, "reason": reason, "comment": ""}),
		mustJSON(map[string]any{"arena": false, "chat_id": chat, "message_id": msg, "message_index": 1, "tags": []string{}}),
		mustJSON(map[string]any{"chat": map[string]any{"id": chat}}), at, at)
}

// generated adds n chats spread over the week before the end, some sharing
// an updated_at second, with 1 to 3 exchanges and sometimes a regeneration.
func (w *sampleWriter) generated(n int) {
	models := append([]string{"contract-reviewer", "support-helper", "sql-buddy"}, baseModels...)
	prompts := []string{"Summarise this thread.", "Fix this SQL.", "Translate to German.", "Draft a reply to the customer.", "What does clause 3 mean?"}
	for i := range n {
		user := sampleUsers[w.rng.IntN(len(sampleUsers))].id
		model := models[w.rng.IntN(len(models))]
		t0 := w.at(float64(w.rng.IntN(160))+3) - int64(w.rng.IntN(3600))
		t := newTree()
		parent, ts := "", t0
		for x := range 1 + w.rng.IntN(3) {
			u := t.add(fmt.Sprintf("m-g%03d-u%d", i, x), parent, "user", prompts[w.rng.IntN(len(prompts))], ts, nil)
			ts += int64(2 + w.rng.IntN(20))
			in, out := 20+w.rng.IntN(400), 10+w.rng.IntN(300)
			extra := map[string]any{"model": model, "modelIdx": 0, "done": true}
			switch w.rng.IntN(3) {
			case 0:
				extra["usage"] = openaiUsage(in, out)
			case 1:
				extra["usage"] = normalisedUsage(in, out, float64(in+out)*0.000002)
			default:
				extra["info"] = ollamaInfo(in, out)
			}
			a := t.add(fmt.Sprintf("m-g%03d-a%d", i, x), u, "assistant", "Here is a draft answer.", ts, extra)
			if w.rng.IntN(5) == 0 {
				ts += 30
				a = t.add(fmt.Sprintf("m-g%03d-a%dr", i, x), u, "assistant", "Here is a better answer.", ts, extra)
			}
			parent = a
			ts += int64(30 + w.rng.IntN(600))
		}
		updated := ts
		if i%10 == 3 && i > 0 {
			updated = w.at(2) // several chats last touched in the same second, after their messages
		}
		title := fmt.Sprintf("Chat %d", i+1)
		w.insertChat(fmt.Sprintf("g-%08x-%03d", w.rng.Uint32(), i), user, title, t.doc("", title, []string{model}, t0*1000, nil),
			t0, max(updated, t0), i%13 == 5, `{}`)
	}
}
