package vendortest

import (
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The group_by[] values each vendor's endpoints accept.
var (
	openAIUsageGroups    = []string{"project_id", "user_id", "api_key_id", "model", "batch", "service_tier"}
	anthropicUsageGroups = []string{"api_key_id", "workspace_id", "model", "service_tier", "context_window",
		"inference_geo", "account_id", "service_account_id", "speed"}
	openAICostGroups    = []string{"project_id", "line_item"}
	anthropicCostGroups = []string{"workspace_id", "description"}
)

// dimsOf returns the vendor's dimensions of u by name; a missing value is
// nil (null). Dimensions the fake does not model are always nil.
func (s *Server) dimsOf(u Usage) map[string]any {
	str := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	if s.vendor == "openai" {
		return map[string]any{"project_id": str(u.Project), "user_id": str(u.User), "api_key_id": str(u.APIKey),
			"model": str(u.Model), "batch": u.Batch, "service_tier": str(u.ServiceTier)}
	}
	return map[string]any{"api_key_id": str(u.APIKey), "workspace_id": str(u.Project), "model": str(u.Model),
		"service_tier": str(u.ServiceTier), "account_id": str(u.User), "context_window": nil, "inference_geo": nil,
		"service_account_id": nil, "speed": nil}
}

// usageAnswer answers a usage request: per bucket, the rows summed by the
// grouped dimensions, the others null.
func (s *Server) usageAnswer(q url.Values) (any, error) {
	groups := openAIUsageGroups
	if s.vendor == "anthropic" {
		groups = anthropicUsageGroups
	}
	w, err := s.parseWindow(q, false, groups)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	rows := slices.Clone(s.usage)
	s.mu.Unlock()
	starts, more, next := w.buckets()
	data := []any{}
	for _, bs := range starts {
		be := bs.Add(w.width)
		sums := map[string]*Usage{}
		var keys []string
		var dims = map[string]map[string]any{}
		for _, u := range rows {
			if u.Hour.Before(bs) || !u.Hour.Before(be) {
				continue
			}
			all := s.dimsOf(u)
			d := map[string]any{}
			for name := range all {
				d[name] = nil
			}
			for _, g := range w.groupBy {
				d[g] = all[g]
			}
			k := fmt.Sprint(sortedValues(d))
			if sums[k] == nil {
				sums[k] = &Usage{}
				keys = append(keys, k)
				dims[k] = d
			}
			x := sums[k]
			x.Requests += u.Requests
			x.Uncached += u.Uncached
			x.CacheRead += u.CacheRead
			x.CacheWrite5m += u.CacheWrite5m
			x.CacheWrite1h += u.CacheWrite1h
			x.Output += u.Output
			x.AudioInput += u.AudioInput
			x.AudioOutput += u.AudioOutput
			x.WebSearches += u.WebSearches
		}
		slices.Sort(keys)
		results := []any{}
		for _, k := range keys {
			results = append(results, s.usageResult(dims[k], sums[k]))
		}
		b := map[string]any{"results": results}
		s.bucketTimes(b, bs, be)
		data = append(data, b)
	}
	return s.envelope(data, more, next), nil
}

func sortedValues(m map[string]any) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%v", k, v))
	}
	slices.Sort(out)
	return out
}

func (s *Server) usageResult(dims map[string]any, u *Usage) map[string]any {
	r := map[string]any{}
	for k, v := range dims {
		r[k] = v
	}
	if s.vendor == "openai" {
		r["object"] = "organization.usage.completions.result"
		r["input_tokens"] = u.Uncached + u.CacheRead
		r["input_cached_tokens"] = u.CacheRead
		r["output_tokens"] = u.Output
		r["input_audio_tokens"] = u.AudioInput
		r["output_audio_tokens"] = u.AudioOutput
		r["num_model_requests"] = u.Requests
		return r
	}
	r["uncached_input_tokens"] = u.Uncached
	r["cache_read_input_tokens"] = u.CacheRead
	r["cache_creation"] = map[string]any{"ephemeral_5m_input_tokens": u.CacheWrite5m, "ephemeral_1h_input_tokens": u.CacheWrite1h}
	r["output_tokens"] = u.Output
	r["server_tool_use"] = map[string]any{"web_search_requests": u.WebSearches}
	return r
}

// costsAnswer answers a cost request: per day, the costs summed by the
// grouped fields.
func (s *Server) costsAnswer(q url.Values) (any, error) {
	groups := openAICostGroups
	if s.vendor == "anthropic" {
		groups = anthropicCostGroups
	}
	w, err := s.parseWindow(q, true, groups)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	costs := slices.Clone(s.costs)
	s.mu.Unlock()
	grouped := func(g string) bool { return slices.Contains(w.groupBy, g) }
	starts, more, next := w.buckets()
	data := []any{}
	for _, day := range starts {
		type key struct{ project, item, model string }
		sums := map[key]*big.Rat{}
		var keys []key
		for _, c := range costs {
			if !c.Day.Equal(day) {
				continue
			}
			var k key
			if grouped(groups[0]) {
				k.project = c.Project
			}
			if grouped(groups[1]) {
				k.item, k.model = c.LineItem, c.Model
			}
			if sums[k] == nil {
				sums[k] = new(big.Rat)
				keys = append(keys, k)
			}
			v, _ := new(big.Rat).SetString(c.USD)
			sums[k].Add(sums[k], v)
		}
		slices.SortFunc(keys, func(a, b key) int {
			return strings.Compare(a.project+"\x00"+a.item+"\x00"+a.model, b.project+"\x00"+b.item+"\x00"+b.model)
		})
		results := []any{}
		for _, k := range keys {
			results = append(results, s.costResult(k.project, k.item, k.model, sums[k], grouped(groups[1])))
		}
		b := map[string]any{"results": results}
		s.bucketTimes(b, day, day.Add(w.width))
		data = append(data, b)
	}
	return s.envelope(data, more, next), nil
}

func (s *Server) costResult(project, item, model string, usd *big.Rat, byItem bool) map[string]any {
	str := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	if s.vendor == "openai" {
		return map[string]any{"object": "organization.costs.result", "project_id": str(project), "line_item": str(item),
			"amount": map[string]any{"value": jsonNumber(amount(usd)), "currency": "usd"}}
	}
	cents := new(big.Rat).Mul(usd, big.NewRat(100, 1))
	r := map[string]any{"amount": amount(cents), "currency": "USD", "workspace_id": str(project),
		"description": nil, "cost_type": nil, "model": nil, "token_type": nil, "service_tier": nil, "context_window": nil}
	if byItem {
		r["description"], r["model"] = str(item), str(model)
		r["cost_type"] = "tokens"
		if model == "" {
			r["cost_type"] = "web_search"
		}
	}
	return r
}

// usersAnswer answers a page of the users list.
func (s *Server) usersAnswer(q url.Values) (any, error) {
	maxLimit, afterName := 100, "after"
	if s.vendor == "anthropic" {
		maxLimit, afterName = 1000, "after_id"
	}
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return nil, fmt.Errorf("limit %q must be between 1 and %d", v, maxLimit)
		}
		limit = n
	}
	s.mu.Lock()
	users := slices.Clone(s.users)
	s.mu.Unlock()
	from := 0
	if after := q.Get(afterName); after != "" {
		i := slices.IndexFunc(users, func(u user) bool { return u.id == after })
		if i < 0 {
			return nil, fmt.Errorf("invalid %s %q", afterName, after)
		}
		from = i + 1
	}
	end := min(from+limit, len(users))
	data := []any{}
	for _, u := range users[from:end] {
		if s.vendor == "openai" {
			data = append(data, map[string]any{"object": "organization.user", "id": u.id, "name": "Name of " + u.id,
				"email": u.email, "role": "reader", "added_at": 1711471533})
		} else {
			data = append(data, map[string]any{"type": "user", "id": u.id, "name": "Name of " + u.id,
				"email": u.email, "role": "user", "added_at": time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC).Format(time.RFC3339)})
		}
	}
	m := map[string]any{"data": data, "has_more": end < len(users), "first_id": nil, "last_id": nil}
	if end > from {
		m["first_id"], m["last_id"] = users[from].id, users[end-1].id
	}
	if s.vendor == "openai" {
		m["object"] = "list"
	}
	return m, nil
}
