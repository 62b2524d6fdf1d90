package webui

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// tokenCount is the usage recorded on one assistant message.
type tokenCount struct {
	input, output, total int64
	cost                 float64
	recorded             bool
}

// Keys of the token counts in the three dialects Open WebUI stores: its own
// normalised keys, OpenAI's, Ollama's and llama.cpp's.
var (
	inputKeys  = []string{"input_tokens", "prompt_tokens", "prompt_eval_count", "prompt_n"}
	outputKeys = []string{"output_tokens", "completion_tokens", "eval_count", "predicted_n"}
)

// tokens reads a message's usage: message.usage, else the legacy
// message.info.usage, else (very old Ollama answers) the counts directly in
// message.info. Cost is only there when the model's provider sent one.
func (m *message) tokens() tokenCount {
	u := m.Usage
	if len(u) == 0 {
		if nested, ok := m.Info["usage"].(map[string]any); ok {
			u = nested
		} else {
			u = m.Info
		}
	}
	var t tokenCount
	if len(u) == 0 {
		return t
	}
	in, okIn := firstNumber(u, inputKeys)
	out, okOut := firstNumber(u, outputKeys)
	t.input, t.output = int64(in), int64(out)
	t.recorded = okIn || okOut
	if total, ok := number(u["total_tokens"]); ok {
		t.total = int64(total)
		t.recorded = true
	} else {
		t.total = t.input + t.output
	}
	if c, ok := number(u["cost"]); ok {
		t.cost = c
	} else if c, ok := number(u["total_cost"]); ok {
		t.cost = c
	} else {
		for _, k := range []string{"input_cost", "output_cost", "prompt_cost", "completion_cost"} {
			if c, ok := number(u[k]); ok {
				t.cost += c
			}
		}
	}
	return t
}

func firstNumber(m map[string]any, keys []string) (float64, bool) {
	for _, k := range keys {
		if v, ok := number(m[k]); ok {
			return v, true
		}
	}
	return 0, false
}

func number(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}

// bucketAcc accumulates one usage bucket.
type bucketAcc struct {
	key           provider.UsageKey
	requests      int64
	input, output int64
	cost          float64
	conversations map[string]bool
	users         map[string]bool
}

// Usage implements [provider.DataSource]. Open WebUI keeps no usage table:
// buckets are computed from the assistant messages of every branch of the
// chats, each a request at its own timestamp, with the tokens it recorded.
// Chats whose rows span the range are read (created before its end, updated
// at or after its start), so a page costs a scan of those chats.
func (s *Source) Usage(ctx context.Context, q provider.UsageQuery) (provider.Page[spec.UsageBucket], error) {
	var page provider.Page[spec.UsageBucket]
	width, grouped, err := q.Check()
	if err != nil {
		return page, err
	}
	if !s.ownTenant(q.Tenant) {
		return page, nil
	}
	// What the chats refer to is loaded first, whole: the chats of a range
	// may be many more than an IN list holds.
	models, err := s.models(ctx)
	if err != nil {
		return page, err
	}
	var departments map[string]string
	if grouped[3] {
		if departments, err = s.departments(ctx); err != nil {
			return page, err
		}
	}
	rows, err := s.query(ctx, `SELECT `+chatColumns+` FROM chat c WHERE `+notShared+` AND c.updated_at >= ? AND c.created_at < ?`,
		q.Start.Unix(), q.End.Add(time.Second-1).Unix())
	if err != nil {
		return page, err
	}
	defer rows.Close()
	accs := map[provider.UsageKey]*bucketAcc{}
	// One chat at a time: only the buckets stay in memory.
	for rows.Next() {
		c, err := scanChat(rows)
		if err != nil {
			return page, err
		}
		for _, m := range c.parsed.all() {
			if m.Role != spec.RoleAssistant {
				continue
			}
			at := epochTime(m.Timestamp)
			if at.Before(q.Start) || !at.Before(q.End) {
				continue
			}
			model, assistant := m.Model, ""
			if mr, ok := models[m.Model]; ok && mr.baseModelID != "" {
				model, assistant = mr.baseModelID, mr.id
			}
			k := provider.UsageKey{Start: q.Start.Add(at.Sub(q.Start) / width * width).UTC()}
			if grouped[0] {
				k.Model = model
			}
			if grouped[1] {
				k.AssistantID = assistant
			}
			if grouped[2] {
				k.UserID = c.userID
			}
			if grouped[3] {
				k.Department = departments[c.userID]
			}
			a := accs[k]
			if a == nil {
				a = &bucketAcc{key: k, conversations: map[string]bool{}, users: map[string]bool{}}
				accs[k] = a
			}
			t := m.tokens()
			a.requests++
			a.input += t.input
			a.output += t.output
			a.cost += t.cost
			a.conversations[c.id] = true
			a.users[c.userID] = true
		}
	}
	if err := rows.Err(); err != nil {
		return page, fmt.Errorf("webui: read chats: %w", err)
	}
	keys := make([]provider.UsageKey, 0, len(accs))
	for k := range accs {
		if q.After == nil || q.After.Less(k) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })
	if len(keys) > q.Limit {
		keys, page.HasMore = keys[:q.Limit], true
	}
	for _, k := range keys {
		a := accs[k]
		b := spec.UsageBucket{
			StartAt:     spec.NewTime(k.Start),
			EndAt:       spec.NewTime(k.Start.Add(width)),
			Granularity: q.Granularity,
			Metrics: spec.UsageMetrics{
				Requests: a.requests, Conversations: int64(len(a.conversations)), ActiveUsers: int64(len(a.users)),
				InputTokens: a.input, OutputTokens: a.output, Cost: provider.RoundCost(a.cost),
			},
		}
		dim := func(on bool, v string) *string {
			if !on {
				return nil
			}
			return &v
		}
		b.Dimensions = spec.UsageDimensions{
			Model: dim(grouped[0], k.Model), AssistantID: dim(grouped[1], k.AssistantID),
			UserID: dim(grouped[2], k.UserID), Department: dim(grouped[3], k.Department),
		}
		page.Items = append(page.Items, b)
	}
	return page, nil
}
