package vendorusage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// openAI reads GET /v1/organization/usage/completions (hourly, grouped by
// every dimension), /v1/organization/costs (daily, by project and line
// item) and /v1/organization/users.
var openAI = &vendor{
	name: "openai", title: "OpenAI", defaultURL: DefaultOpenAIURL,
	usagePath:      "/v1/organization/usage/completions",
	costsPath:      "/v1/organization/costs",
	usersPath:      "/v1/organization/users",
	maxCostBuckets: 180,
	maxUsers:       100,
	authorize:      func(h http.Header, key string) { h.Set("Authorization", "Bearer "+key) },
	usageQuery: func(start, end time.Time, limit int, page string) url.Values {
		q := url.Values{"start_time": {unixParam(start)}, "end_time": {unixParam(end)}, "bucket_width": {"1h"},
			"group_by[]": {"project_id", "user_id", "api_key_id", "model", "batch", "service_tier"},
			"limit":      {strconv.Itoa(limit)}}
		if page != "" {
			q.Set("page", page)
		}
		return q
	},
	costsQuery: func(start, end time.Time, limit int, page string) url.Values {
		q := url.Values{"start_time": {unixParam(start)}, "end_time": {unixParam(end)}, "bucket_width": {"1d"},
			"group_by[]": {"project_id", "line_item"}, "limit": {strconv.Itoa(limit)}}
		if page != "" {
			q.Set("page", page)
		}
		return q
	},
	usersQuery: func(limit int, after string) url.Values {
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		if after != "" {
			q.Set("after", after)
		}
		return q
	},
	parseUsage: parseOpenAIUsage,
	parseCosts: parseOpenAICosts,
	parseUsers: parseUsersList,
	userPrefix: "openai-user:", keyPrefix: "openai-api-key:", deptPrefix: "openai-project:",
	costsAssistant: "openai-costs",
	modelOf:        openAILineItemModel,
}

// openAILineItemModel returns the model a line item names ("gpt-4o-2024-08-06,
// input" names gpt-4o-2024-08-06), or "" for a line item of no model (such
// as a tool's calls).
func openAILineItemModel(r costResult) string {
	if r.LineItem == nil {
		return ""
	}
	model, _, ok := strings.Cut(*r.LineItem, ",")
	if !ok {
		return ""
	}
	return strings.TrimSpace(model)
}

// decodeStrict decodes body into v, with numbers as json.Number where v
// asks for them, and fails on trailing data.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// page is the paging envelope both vendors share.
type page struct {
	HasMore  *bool   `json:"has_more"`
	NextPage *string `json:"next_page"`
}

func (p page) check() (bool, string, error) {
	if p.HasMore == nil {
		return false, "", errors.New("no has_more")
	}
	next := ""
	if p.NextPage != nil {
		next = *p.NextPage
	}
	if *p.HasMore && next == "" {
		return false, "", errors.New("has_more without next_page")
	}
	return *p.HasMore, next, nil
}

func parseOpenAIUsage(body []byte) (usageAnswer, error) {
	var a struct {
		page
		Data *[]struct {
			Start   *int64 `json:"start_time"`
			End     *int64 `json:"end_time"`
			Results []struct {
				Input     int64   `json:"input_tokens"`
				Output    int64   `json:"output_tokens"`
				Cached    int64   `json:"input_cached_tokens"`
				Requests  int64   `json:"num_model_requests"`
				ProjectID *string `json:"project_id"`
				UserID    *string `json:"user_id"`
				APIKeyID  *string `json:"api_key_id"`
				Model     *string `json:"model"`
			} `json:"results"`
		} `json:"data"`
	}
	if err := decodeStrict(body, &a); err != nil {
		return usageAnswer{}, err
	}
	if a.Data == nil {
		return usageAnswer{}, errors.New("no data")
	}
	var ans usageAnswer
	var err error
	if ans.HasMore, ans.NextPage, err = a.check(); err != nil {
		return usageAnswer{}, err
	}
	for _, b := range *a.Data {
		if b.Start == nil || b.End == nil {
			return usageAnswer{}, errors.New("a bucket without start_time or end_time")
		}
		ub := usageBucket{Start: time.Unix(*b.Start, 0).UTC(), End: time.Unix(*b.End, 0).UTC()}
		if err := checkBucketTimes(ub.Start, ub.End, time.Hour); err != nil {
			return usageAnswer{}, err
		}
		for _, r := range b.Results {
			if err := checkCounts(r.Input, r.Output, r.Cached, r.Requests); err != nil {
				return usageAnswer{}, err
			}
			if r.Cached > r.Input {
				return usageAnswer{}, fmt.Errorf("input_cached_tokens %d exceed input_tokens %d", r.Cached, r.Input)
			}
			ub.Results = append(ub.Results, usageResult{
				Model: r.Model, User: r.UserID, APIKey: r.APIKeyID, Dept: r.ProjectID,
				Requests: r.Requests, Uncached: r.Input - r.Cached, CacheRead: r.Cached, Output: r.Output,
			})
		}
		ans.Buckets = append(ans.Buckets, ub)
	}
	return ans, nil
}

func parseOpenAICosts(body []byte) (costAnswer, error) {
	var a struct {
		page
		Data *[]struct {
			Start   *int64 `json:"start_time"`
			End     *int64 `json:"end_time"`
			Results []struct {
				Amount *struct {
					Value    *json.Number `json:"value"`
					Currency string       `json:"currency"`
				} `json:"amount"`
				LineItem  *string `json:"line_item"`
				ProjectID *string `json:"project_id"`
			} `json:"results"`
		} `json:"data"`
	}
	if err := decodeStrict(body, &a); err != nil {
		return costAnswer{}, err
	}
	if a.Data == nil {
		return costAnswer{}, errors.New("no data")
	}
	var ans costAnswer
	var err error
	if ans.HasMore, ans.NextPage, err = a.check(); err != nil {
		return costAnswer{}, err
	}
	for _, b := range *a.Data {
		if b.Start == nil || b.End == nil {
			return costAnswer{}, errors.New("a bucket without start_time or end_time")
		}
		cb := costBucket{Start: time.Unix(*b.Start, 0).UTC(), End: time.Unix(*b.End, 0).UTC()}
		if err := checkBucketTimes(cb.Start, cb.End, 24*time.Hour); err != nil {
			return costAnswer{}, err
		}
		for _, r := range b.Results {
			if r.Amount == nil || r.Amount.Value == nil {
				return costAnswer{}, errors.New("a cost without amount.value")
			}
			if !strings.EqualFold(r.Amount.Currency, "usd") {
				return costAnswer{}, fmt.Errorf("a cost in %q, not usd", r.Amount.Currency)
			}
			v, err := parseDecimalNumber(r.Amount.Value.String())
			if err != nil {
				return costAnswer{}, err
			}
			cb.Results = append(cb.Results, costResult{Amount: v, Dept: r.ProjectID, LineItem: r.LineItem})
		}
		ans.Buckets = append(ans.Buckets, cb)
	}
	return ans, nil
}

// parseDecimalNumber reads a JSON number (possibly with an exponent)
// exactly, within the bound of one amount.
func parseDecimalNumber(s string) (*big.Rat, error) {
	if len(s) > 64 {
		return nil, fmt.Errorf("amount %q is too long", s)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("amount %q is not a number", s)
	}
	if err := checkAmount(r); err != nil {
		return nil, err
	}
	return r, nil
}

// parseUsersList reads a users page of either vendor: {"data":[{"id",
// "email"}...],"has_more","last_id"}.
func parseUsersList(body []byte) (usersAnswer, error) {
	var a struct {
		Data *[]struct {
			ID    string `json:"id"`
			Email string `json:"email"`
		} `json:"data"`
		HasMore *bool   `json:"has_more"`
		LastID  *string `json:"last_id"`
	}
	if err := decodeStrict(body, &a); err != nil {
		return usersAnswer{}, err
	}
	if a.Data == nil || a.HasMore == nil {
		return usersAnswer{}, errors.New("no data or has_more")
	}
	ans := usersAnswer{Users: map[string]string{}, HasMore: *a.HasMore}
	for _, u := range *a.Data {
		if u.ID == "" {
			return usersAnswer{}, errors.New("a user without id")
		}
		ans.Users[u.ID] = strings.ToLower(strings.TrimSpace(u.Email))
		ans.LastID = u.ID
	}
	if a.LastID != nil && *a.LastID != "" {
		ans.LastID = *a.LastID
	}
	if ans.HasMore && ans.LastID == "" {
		return usersAnswer{}, errors.New("has_more without last_id")
	}
	return ans, nil
}
