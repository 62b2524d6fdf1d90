package vendorusage

import (
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// anthropicVersion is the API version the answers' shapes are read in.
const anthropicVersion = "2023-06-01"

// anthropic reads GET /v1/organizations/usage_report/messages (hourly,
// grouped by every dimension of a person, key, workspace and model),
// /v1/organizations/cost_report (daily, by workspace and description) and
// /v1/organizations/users.
var anthropic = &vendor{
	name: "anthropic", title: "Anthropic", defaultURL: DefaultAnthropicURL,
	usagePath:      "/v1/organizations/usage_report/messages",
	costsPath:      "/v1/organizations/cost_report",
	usersPath:      "/v1/organizations/users",
	maxCostBuckets: 31,
	maxUsers:       1000,
	authorize: func(h http.Header, key string) {
		h.Set("X-Api-Key", key)
		h.Set("Anthropic-Version", anthropicVersion)
	},
	usageQuery: func(start, end time.Time, limit int, page string) url.Values {
		q := url.Values{"starting_at": {rfc3339(start)}, "ending_at": {rfc3339(end)}, "bucket_width": {"1h"},
			"group_by[]": {"api_key_id", "workspace_id", "model", "service_tier", "account_id"},
			"limit":      {strconv.Itoa(limit)}}
		if page != "" {
			q.Set("page", page)
		}
		return q
	},
	costsQuery: func(start, end time.Time, limit int, page string) url.Values {
		q := url.Values{"starting_at": {rfc3339(start)}, "ending_at": {rfc3339(end)}, "bucket_width": {"1d"},
			"group_by[]": {"workspace_id", "description"}, "limit": {strconv.Itoa(limit)}}
		if page != "" {
			q.Set("page", page)
		}
		return q
	},
	usersQuery: func(limit int, after string) url.Values {
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		if after != "" {
			q.Set("after_id", after)
		}
		return q
	},
	parseUsage: parseAnthropicUsage,
	parseCosts: parseAnthropicCosts,
	parseUsers: parseUsersList,
	userPrefix: "anthropic-account:", keyPrefix: "anthropic-api-key:", deptPrefix: "anthropic-workspace:",
	costsAssistant: "anthropic-costs",
	modelOf:        func(r costResult) string { return strings.TrimSpace(str(r.Model)) },
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// parseTime reads a bucket's RFC 3339 time.
func parseTime(name string, s *string) (time.Time, error) {
	if s == nil {
		return time.Time{}, fmt.Errorf("a bucket without %s", name)
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q is not an RFC 3339 time", name, *s)
	}
	return t.UTC(), nil
}

func parseAnthropicUsage(body []byte) (usageAnswer, error) {
	var a struct {
		page
		Data *[]struct {
			Start   *string `json:"starting_at"`
			End     *string `json:"ending_at"`
			Results []struct {
				Uncached      int64 `json:"uncached_input_tokens"`
				CacheRead     int64 `json:"cache_read_input_tokens"`
				CacheCreation struct {
					FiveMinutes int64 `json:"ephemeral_5m_input_tokens"`
					OneHour     int64 `json:"ephemeral_1h_input_tokens"`
				} `json:"cache_creation"`
				Output      int64   `json:"output_tokens"`
				APIKeyID    *string `json:"api_key_id"`
				WorkspaceID *string `json:"workspace_id"`
				Model       *string `json:"model"`
				AccountID   *string `json:"account_id"`
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
		var ub usageBucket
		if ub.Start, err = parseTime("starting_at", b.Start); err != nil {
			return usageAnswer{}, err
		}
		if ub.End, err = parseTime("ending_at", b.End); err != nil {
			return usageAnswer{}, err
		}
		if err := checkBucketTimes(ub.Start, ub.End, time.Hour); err != nil {
			return usageAnswer{}, err
		}
		for _, r := range b.Results {
			cc := r.CacheCreation
			if err := checkCounts(r.Uncached, r.CacheRead, cc.FiveMinutes, cc.OneHour, r.Output); err != nil {
				return usageAnswer{}, err
			}
			ub.Results = append(ub.Results, usageResult{
				Model: r.Model, User: r.AccountID, APIKey: r.APIKeyID, Dept: r.WorkspaceID,
				Uncached: r.Uncached, CacheRead: r.CacheRead, CacheWrite: cc.FiveMinutes + cc.OneHour, Output: r.Output,
			})
		}
		ans.Buckets = append(ans.Buckets, ub)
	}
	return ans, nil
}

// hundred turns Anthropic's cents into USD.
var hundred = big.NewRat(100, 1)

func parseAnthropicCosts(body []byte) (costAnswer, error) {
	var a struct {
		page
		Data *[]struct {
			Start   *string `json:"starting_at"`
			End     *string `json:"ending_at"`
			Results []struct {
				Amount      *string `json:"amount"`
				Currency    string  `json:"currency"`
				Description *string `json:"description"`
				Model       *string `json:"model"`
				WorkspaceID *string `json:"workspace_id"`
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
		var cb costBucket
		if cb.Start, err = parseTime("starting_at", b.Start); err != nil {
			return costAnswer{}, err
		}
		if cb.End, err = parseTime("ending_at", b.End); err != nil {
			return costAnswer{}, err
		}
		if err := checkBucketTimes(cb.Start, cb.End, 24*time.Hour); err != nil {
			return costAnswer{}, err
		}
		for _, r := range b.Results {
			if r.Amount == nil {
				return costAnswer{}, errors.New("a cost without amount")
			}
			if !strings.EqualFold(r.Currency, "usd") {
				return costAnswer{}, fmt.Errorf("a cost in %q, not USD", r.Currency)
			}
			cents, err := parseDecimal(*r.Amount)
			if err != nil {
				return costAnswer{}, err
			}
			v := new(big.Rat).Quo(cents, hundred)
			if err := checkAmount(v); err != nil {
				return costAnswer{}, err
			}
			cb.Results = append(cb.Results, costResult{Amount: v, Dept: r.WorkspaceID, LineItem: r.Description, Model: r.Model})
		}
		ans.Buckets = append(ans.Buckets, cb)
	}
	return ans, nil
}
