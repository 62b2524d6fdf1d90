package webui

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// chatColumns are the chat columns a conversation is built from. JSON
// columns are read as text on both databases.
const chatColumns = `c.id, c.user_id, c.title, CAST(c.chat AS TEXT), c.created_at, c.updated_at, c.share_id, c.archived,
	c.pinned, CAST(c.meta AS TEXT), c.folder_id`

// notShared leaves out the rows older releases kept for share links: a copy
// of the chat owned by the pseudo-user "shared-<chat id>".
const notShared = `COALESCE(c.user_id, '') NOT LIKE 'shared-%'`

// chatRow is one row of the chat table.
type chatRow struct {
	id, userID, title    string
	doc                  sql.NullString
	createdAt, updatedAt int64
	shareID              sql.NullString
	archived             bool
	pinned               sql.NullBool
	meta, folderID       sql.NullString
	parsed               chatDoc
	parseErr             error
}

func scanChats(rows *sql.Rows) ([]chatRow, error) {
	defer rows.Close()
	var out []chatRow
	for rows.Next() {
		r, err := scanChat(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("webui: read chats: %w", err)
	}
	return out, nil
}

// scanChat reads the current row, of chatColumns, and parses its JSON.
func scanChat(rows *sql.Rows) (chatRow, error) {
	var r chatRow
	var userID, title sql.NullString
	var archived sql.NullBool
	if err := rows.Scan(&r.id, &userID, &title, &r.doc, &r.createdAt, &r.updatedAt, &r.shareID, &archived,
		&r.pinned, &r.meta, &r.folderID); err != nil {
		return r, fmt.Errorf("webui: read chat: %w", err)
	}
	r.userID, r.title, r.archived = userID.String, title.String, archived.Bool
	if r.doc.Valid && r.doc.String != "" {
		r.parseErr = json.Unmarshal([]byte(r.doc.String), &r.parsed)
	}
	return r, nil
}

// chatDoc is the JSON document in chat.chat, as the web client writes it.
type chatDoc struct {
	Models  []string                   `json:"models"`
	System  string                     `json:"system"`
	Params  map[string]json.RawMessage `json:"params"`
	History struct {
		Messages  map[string]message `json:"messages"`
		CurrentID string             `json:"currentId"`
	} `json:"history"`
	// Messages is the older, linear copy of the visible branch.
	Messages []message `json:"messages"`
	// Timestamp is the creation time in milliseconds.
	Timestamp float64 `json:"timestamp"`
	Tags      []any   `json:"tags"`
}

// message is one node of the message tree.
type message struct {
	ID          string          `json:"id"`
	ParentID    *string         `json:"parentId"`
	ChildrenIDs []string        `json:"childrenIds"`
	Role        string          `json:"role"`
	Content     json.RawMessage `json:"content"`
	Model       string          `json:"model"`
	ModelIdx    int             `json:"modelIdx"`
	Done        *bool           `json:"done"`
	// Timestamp is in seconds (epochTime copes with milliseconds).
	Timestamp float64        `json:"timestamp"`
	Usage     map[string]any `json:"usage"`
	Info      map[string]any `json:"info"`
	Files     []struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	} `json:"files"`
}

// text returns a message's content as text: a string, or the text blocks of
// a list of content blocks, joined by blank lines.
func (m *message) text() string {
	if len(m.Content) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			if b.Text != "" {
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, "\n\n")
	}
	return ""
}

// branch returns the visible conversation: the path from the root of the
// message tree to history.currentId. Without a tree it falls back to the
// linear messages list; with a currentId missing from the tree, to the path
// ending at the latest leaf.
func (d *chatDoc) branch() []message {
	msgs := d.History.Messages
	if len(msgs) == 0 {
		return d.Messages
	}
	cur, ok := msgs[d.History.CurrentID]
	if !ok {
		var leaves []message
		for _, m := range msgs {
			if len(m.ChildrenIDs) == 0 {
				leaves = append(leaves, m)
			}
		}
		if len(leaves) == 0 {
			return nil
		}
		sort.Slice(leaves, func(i, j int) bool {
			if leaves[i].Timestamp != leaves[j].Timestamp {
				return leaves[i].Timestamp > leaves[j].Timestamp
			}
			return leaves[i].ID > leaves[j].ID
		})
		cur = leaves[0]
	}
	var path []message
	for steps := 0; steps <= len(msgs); steps++ {
		path = append(path, cur)
		if cur.ParentID == nil || *cur.ParentID == "" {
			break
		}
		p, ok := msgs[*cur.ParentID]
		if !ok {
			break
		}
		cur = p
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path
}

// all returns every message of the tree, every branch included, in a fixed
// order (by id), or the linear list when there is no tree.
func (d *chatDoc) all() []message {
	if len(d.History.Messages) == 0 {
		return d.Messages
	}
	out := make([]message, 0, len(d.History.Messages))
	for _, m := range d.History.Messages {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// catalogue holds what conversations refer to beyond the chat row: users
// with their groups, custom models, and attachments.
type catalogue struct {
	users       map[string]userRow
	models      map[string]modelRow // every model row, by id
	attachments map[string][]spec.Attachment
}

// ListConversations implements [provider.DataSource].
func (s *Source) ListConversations(ctx context.Context, q provider.ConversationQuery) (provider.Page[spec.Conversation], error) {
	var page provider.Page[spec.Conversation]
	if !s.ownTenant(q.Tenant) {
		return page, nil
	}
	where, args := []string{notShared}, []any{}
	if !q.UpdatedSince.IsZero() {
		where = append(where, "c.updated_at >= ?")
		args = append(args, ceilSeconds(q.UpdatedSince.UnixMilli()))
	}
	if !q.StartedAfter.IsZero() {
		where = append(where, "c.created_at > ?")
		args = append(args, floorSeconds(q.StartedAfter.UnixMilli()))
	}
	where, args = s.keyset(where, args, "c.updated_at", "c.id", q.After)
	rows, err := s.query(ctx, fmt.Sprintf(`SELECT %s FROM chat c WHERE %s ORDER BY c.updated_at, %s LIMIT %d`,
		chatColumns, strings.Join(where, " AND "), s.binary("c.id"), q.Limit+1), args...)
	if err != nil {
		return page, err
	}
	chats, err := scanChats(rows)
	if err != nil {
		return page, err
	}
	if len(chats) > q.Limit {
		chats, page.HasMore = chats[:q.Limit], true
	}
	cat, err := s.catalogueFor(ctx, chats)
	if err != nil {
		return page, err
	}
	for i := range chats {
		page.Items = append(page.Items, cat.conversation(&chats[i]))
	}
	return page, nil
}

// GetConversation implements [provider.DataSource].
func (s *Source) GetConversation(ctx context.Context, tenant, id string) (spec.Conversation, error) {
	if !s.ownTenant(tenant) {
		return spec.Conversation{}, provider.ErrNotFound
	}
	rows, err := s.query(ctx, `SELECT `+chatColumns+` FROM chat c WHERE `+notShared+` AND c.id = ?`, id)
	if err != nil {
		return spec.Conversation{}, err
	}
	chats, err := scanChats(rows)
	if err != nil {
		return spec.Conversation{}, err
	}
	if len(chats) == 0 {
		return spec.Conversation{}, provider.ErrNotFound
	}
	cat, err := s.catalogueFor(ctx, chats)
	if err != nil {
		return spec.Conversation{}, err
	}
	return cat.conversation(&chats[0]), nil
}

// catalogueFor loads the users, models and attachments that chats refer to.
func (s *Source) catalogueFor(ctx context.Context, chats []chatRow) (*catalogue, error) {
	cat := &catalogue{attachments: map[string][]spec.Attachment{}}
	if len(chats) == 0 {
		return cat, nil
	}
	var userIDs, chatIDs []string
	for _, c := range chats {
		userIDs = append(userIDs, c.userID)
		chatIDs = append(chatIDs, c.id)
	}
	var err error
	if cat.users, err = s.users(ctx, userIDs); err != nil {
		return nil, err
	}
	if cat.models, err = s.models(ctx); err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, `SELECT cf.chat_id, f.id, f.filename, f.hash, CAST(f.meta AS TEXT), cf.message_id
		FROM chat_file cf JOIN file f ON f.id = cf.file_id
		WHERE cf.chat_id IN (`+placeholders(len(chatIDs))+`) ORDER BY cf.chat_id, cf.created_at, f.id`, strArgs(chatIDs)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var chatID, fileID string
		var filename, hash, meta, messageID sql.NullString
		if err := rows.Scan(&chatID, &fileID, &filename, &hash, &meta, &messageID); err != nil {
			return nil, fmt.Errorf("webui: read chat files: %w", err)
		}
		var fm struct {
			ContentType string `json:"content_type"`
		}
		if meta.Valid {
			_ = json.Unmarshal([]byte(meta.String), &fm)
		}
		cat.attachments[chatID] = append(cat.attachments[chatID], spec.Attachment{
			ID: fileID, Kind: spec.AttachmentUploaded, Filename: filename.String, MimeType: fm.ContentType, Hash: hash.String,
		})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("webui: read chat files: %w", err)
	}
	return cat, nil
}

// conversation maps a chat row.
func (cat *catalogue) conversation(r *chatRow) spec.Conversation {
	c := spec.Conversation{
		ID:        r.id,
		StartedAt: secondsTime(r.createdAt),
		UpdatedAt: secondsTime(r.updatedAt),
		Status:    "active",
	}
	if r.archived {
		c.Status = "archived"
	}
	if u, ok := cat.users[r.userID]; ok {
		c.User = u.ref()
	} else {
		c.User = &spec.User{ID: r.userID}
	}
	doc := &r.parsed
	branch := doc.branch()
	for _, m := range branch {
		role := m.Role
		if role == "" {
			continue
		}
		c.Messages = append(c.Messages, spec.Message{ID: m.ID, Role: role, Content: m.text(), CreatedAt: timeOf(m.Timestamp)})
	}
	// The model is the one that wrote the last answer of the visible branch,
	// else the first model chosen for the chat.
	modelID := ""
	for i := len(branch) - 1; i >= 0; i-- {
		if branch[i].Role == spec.RoleAssistant && branch[i].Model != "" {
			modelID = branch[i].Model
			if branch[i].Done != nil && !*branch[i].Done {
				c.Status = "in_progress"
			}
			break
		}
	}
	if modelID == "" && len(doc.Models) > 0 {
		modelID = doc.Models[0]
	}
	c.Model = modelID
	c.SystemPrompt = doc.System
	params := doc.Params
	if m, ok := cat.models[modelID]; ok && m.baseModelID != "" {
		c.Assistant = &spec.AssistantRef{ID: m.id, Name: m.name}
		c.Model = m.baseModelID
		if c.SystemPrompt == "" {
			c.SystemPrompt = m.system()
		}
		if len(params) == 0 {
			params = m.params
		}
		c.Tools = m.tools()
	}
	c.Parameters = parameters(params)
	c.Attachments = cat.attachments[r.id]
	var u spec.TokenUsage
	for _, m := range doc.all() {
		if m.Role != spec.RoleAssistant {
			continue
		}
		t := m.tokens()
		u.InputTokens += t.input
		u.OutputTokens += t.output
		u.TotalTokens += t.total
		u.Cost += t.cost
	}
	if u != (spec.TokenUsage{}) {
		u.Cost = provider.RoundCost(u.Cost)
		c.Usage = &u
	}
	c.Metadata = chatMetadata(r)
	return c
}

// timeOf converts a message timestamp; zero stays unset.
func timeOf(v float64) spec.Time {
	t := epochTime(v)
	if t.IsZero() {
		return spec.Time{}
	}
	return spec.NewTime(t)
}

// chatMetadata keeps what Open WebUI records about a chat beyond the spec's
// fields: title, tags, folder, pin, share link, and how many messages the
// tree holds beside the visible branch.
func chatMetadata(r *chatRow) json.RawMessage {
	md := map[string]any{"source": "open-webui", "title": r.title, "pinned": r.pinned.Valid && r.pinned.Bool, "archived": r.archived}
	if r.folderID.Valid && r.folderID.String != "" {
		md["folderId"] = r.folderID.String
	}
	if r.shareID.Valid && r.shareID.String != "" {
		md["shareId"] = r.shareID.String
	}
	var meta struct {
		Tags []any `json:"tags"`
	}
	if r.meta.Valid {
		_ = json.Unmarshal([]byte(r.meta.String), &meta)
	}
	if len(meta.Tags) > 0 {
		md["tags"] = meta.Tags
	}
	if n := len(r.parsed.History.Messages); n > 0 {
		md["treeMessages"] = n
	}
	if r.parseErr != nil {
		md["chatJSONError"] = "chat.chat is not the expected JSON document"
	}
	b, err := json.Marshal(md)
	if err != nil {
		return nil
	}
	return b
}

// parameters maps Open WebUI's sampling parameters (snake case) onto the
// spec's; every other key is kept under its own name.
func parameters(p map[string]json.RawMessage) *spec.Parameters {
	var out spec.Parameters
	for k, v := range p {
		if k == "system" || string(v) == "null" {
			continue
		}
		switch k {
		case "temperature":
			var f float64
			if json.Unmarshal(v, &f) == nil {
				out.Temperature = &f
				continue
			}
		case "top_p":
			var f float64
			if json.Unmarshal(v, &f) == nil {
				out.TopP = &f
				continue
			}
		case "max_tokens":
			var n int64
			if json.Unmarshal(v, &n) == nil {
				out.MaxTokens = &n
				continue
			}
		}
		if out.Extra == nil {
			out.Extra = map[string]json.RawMessage{}
		}
		out.Extra[k] = v
	}
	if out.Temperature == nil && out.TopP == nil && out.MaxTokens == nil && len(out.Extra) == 0 {
		return nil
	}
	return &out
}
