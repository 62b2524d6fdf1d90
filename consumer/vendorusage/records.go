package vendorusage

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// Extra metrics of the buckets, beside those of the AI usage data
// interface: the three kinds of input tokens kept apart (inputTokens is
// their sum), and the part of cost that is a vendor's daily cost per
// project or workspace.
const (
	MetricUncachedInputTokens = "uncachedInputTokens"
	MetricCacheReadTokens     = "cacheReadTokens"
	MetricCacheWriteTokens    = "cacheWriteTokens"
	MetricDailyCost           = "dailyCost"
)

// dims are a bucket's four dimensions; "" is absent.
type dims struct{ model, user, assistant, dept string }

func (d dims) json() map[string]string {
	m := map[string]string{}
	for k, v := range map[string]string{spec.DimensionModel: d.model, spec.DimensionUserID: d.user,
		spec.DimensionAssistantID: d.assistant, spec.DimensionDepartment: d.dept} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

type usageSums struct{ requests, uncached, cacheRead, cacheWrite, output int64 }

// usageRecords sums each bucket's results into the four dimensions.
func (s *Source) usageRecords(ans usageAnswer) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for _, b := range ans.Buckets {
		sums := map[dims]*usageSums{}
		var order []dims
		for _, r := range b.Results {
			d := dims{model: str(r.Model), assistant: prefixed(s.v.keyPrefix, r.APIKey), user: s.userOf(r.User)}
			switch {
			case r.Dept != nil && *r.Dept != "":
				d.dept = s.v.deptPrefix + *r.Dept
			case s.v == anthropic:
				// Grouped by workspace_id, null is the default workspace.
				d.dept = s.v.deptPrefix + "default"
			}
			u := sums[d]
			if u == nil {
				u = &usageSums{}
				sums[d] = u
				order = append(order, d)
			}
			u.requests += r.Requests
			u.uncached += r.Uncached
			u.cacheRead += r.CacheRead
			u.cacheWrite += r.CacheWrite
			u.output += r.Output
		}
		for _, d := range order {
			u := sums[d]
			input := u.uncached + u.cacheRead + u.cacheWrite
			if err := checkCounts(u.requests, input, u.output); err != nil {
				return nil, s.badAnswer(s.v.usagePath, err)
			}
			rec := bucketJSON(b.Start, d, map[string]any{
				"requests": u.requests, "inputTokens": input, "outputTokens": u.output,
				MetricUncachedInputTokens: u.uncached, MetricCacheReadTokens: u.cacheRead, MetricCacheWriteTokens: u.cacheWrite,
			})
			out = append(out, rec)
		}
	}
	return out, nil
}

// costRecords sums each day's costs by project or workspace and model.
// Buckets of days outside [from, until) are left out.
func (s *Source) costRecords(ans costAnswer, from, until time.Time) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for _, b := range ans.Buckets {
		if b.Start.Before(from) || !b.Start.Before(until) {
			continue
		}
		sums := map[dims]*big.Rat{}
		var order []dims
		for _, r := range b.Results {
			d := dims{model: s.v.modelOf(r), assistant: s.v.costsAssistant}
			switch {
			case r.Dept != nil && *r.Dept != "":
				d.dept = s.v.deptPrefix + *r.Dept
			case s.v == anthropic:
				d.dept = s.v.deptPrefix + "default"
			}
			sum := sums[d]
			if sum == nil {
				sum = new(big.Rat)
				sums[d] = sum
				order = append(order, d)
			}
			sum.Add(sum, r.Amount)
		}
		for _, d := range order {
			if err := checkAmount(sums[d]); err != nil {
				return nil, s.badAnswer(s.v.costsPath, err)
			}
			cost := usd(sums[d])
			out = append(out, bucketJSON(b.Start, d, map[string]any{"cost": cost, MetricDailyCost: cost}))
		}
	}
	return out, nil
}

// usd is an exact amount as the nearest float64, rounded to 1e-9 USD.
func usd(r *big.Rat) json.Number {
	return json.Number(strings.TrimRight(strings.TrimRight(r.FloatString(9), "0"), "."))
}

// bucketJSON is an hourly usage bucket of the AI usage data interface.
func bucketJSON(start time.Time, d dims, metrics map[string]any) json.RawMessage {
	b, _ := json.Marshal(map[string]any{ // strings, integers and numbers only
		"startAt":     start.UTC().Format(time.RFC3339),
		"endAt":       start.UTC().Add(time.Hour).Format(time.RFC3339),
		"granularity": spec.GranularityHour,
		"dimensions":  d.json(),
		"metrics":     metrics,
	})
	return b
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func prefixed(prefix string, p *string) string {
	if p == nil || *p == "" {
		return ""
	}
	return prefix + *p
}

// userOf returns the userId of a vendor user id: its email, or the
// prefixed id when the users endpoint does not know it.
func (s *Source) userOf(id *string) string {
	if id == nil || *id == "" {
		return ""
	}
	s.usersMu.Lock()
	email := s.users[*id]
	s.usersMu.Unlock()
	if email != "" {
		return email
	}
	return s.v.userPrefix + *id
}

// How long the users list is believed: it is read again after usersMaxAge,
// or after usersMinAge when the usage names a user it does not know.
const (
	usersMaxAge = time.Hour
	usersMinAge = time.Minute
)

// resolveUsers makes sure the users list knows ids, reading the vendor's
// users endpoint (every page) when it is missing, old, or lacks one of
// them and was read a while ago.
func (s *Source) resolveUsers(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	s.usersMu.Lock()
	defer s.usersMu.Unlock()
	now := s.cfg.Now()
	age := now.Sub(s.usersAt)
	stale := s.usersAt.IsZero() || age >= usersMaxAge || age < 0
	if !stale && age >= usersMinAge {
		stale = slices.ContainsFunc(ids, func(id string) bool { _, ok := s.users[id]; return !ok })
	}
	if !stale {
		return nil
	}
	users := map[string]string{}
	after := ""
	for range maxUserPages {
		body, err := s.get(ctx, s.v.usersPath, s.v.usersQuery(s.v.maxUsers, after))
		if err != nil {
			return err
		}
		ans, err := s.v.parseUsers(body)
		if err != nil {
			return s.badAnswer(s.v.usersPath, err)
		}
		for id, email := range ans.Users {
			users[id] = email
		}
		if !ans.HasMore {
			s.users, s.usersAt = users, now
			return nil
		}
		if ans.LastID == after {
			return s.badAnswer(s.v.usersPath, fmt.Errorf("the page after %q starts again at %q", after, ans.LastID))
		}
		after = ans.LastID
	}
	return spec.Errorf(provider.ErrUnavailable, "%s: GET %s: more than %d pages of users", s.v.title, s.v.usersPath, maxUserPages)
}

// maxUserPages bounds a walk of the users list.
const maxUserPages = 1000
