package vendorusage

import (
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// vendor is what differs between OpenAI and Anthropic: addresses,
// authentication, parameters, answer shapes and the names of the
// dimensions' values.
type vendor struct {
	name, title, defaultURL string
	usagePath, costsPath    string
	usersPath               string
	maxCostBuckets          int
	maxUsers                int
	authorize               func(h http.Header, key string)
	usageQuery              func(start, end time.Time, limit int, page string) url.Values
	costsQuery              func(start, end time.Time, limit int, page string) url.Values
	usersQuery              func(limit int, after string) url.Values
	parseUsage              func(body []byte) (usageAnswer, error)
	parseCosts              func(body []byte) (costAnswer, error)
	parseUsers              func(body []byte) (usersAnswer, error)
	// userPrefix, keyPrefix and deptPrefix prefix the vendor's ids in the
	// dimensions; costsAssistant is the assistantId of cost buckets.
	userPrefix, keyPrefix, deptPrefix, costsAssistant string
	// modelOf returns the model a cost result names, or "".
	modelOf func(costResult) string
}

// usageAnswer is a page of hourly usage, in either vendor's shape.
type usageAnswer struct {
	Buckets  []usageBucket
	HasMore  bool
	NextPage string
}

type usageBucket struct {
	Start, End time.Time
	Results    []usageResult
}

// usageResult is one result of a bucket; a nil dimension is null.
type usageResult struct {
	Model, User, APIKey, Dept *string
	Requests                  int64
	Uncached, CacheRead       int64
	CacheWrite, Output        int64
}

// users returns the user ids the answer names.
func (a usageAnswer) users() []string {
	var ids []string
	for _, b := range a.Buckets {
		for _, r := range b.Results {
			if r.User != nil && *r.User != "" {
				ids = append(ids, *r.User)
			}
		}
	}
	return ids
}

// costAnswer is a page of daily costs.
type costAnswer struct {
	Buckets  []costBucket
	HasMore  bool
	NextPage string
}

type costBucket struct {
	Start, End time.Time
	Results    []costResult
}

// costResult is one cost: Amount in USD, exact.
type costResult struct {
	Amount   *big.Rat
	Dept     *string
	LineItem *string // OpenAI line_item, Anthropic description
	Model    *string // Anthropic only
}

type usersAnswer struct {
	Users   map[string]string // id -> email
	HasMore bool
	LastID  string
}

// maxTokens bounds a count read from a vendor (2^50, what the store keeps).
const maxTokens = 1 << 50

func checkCounts(counts ...int64) error {
	for _, n := range counts {
		if n < 0 || n > maxTokens {
			return fmt.Errorf("a count of %d is outside 0..2^50", n)
		}
	}
	return nil
}

// checkBucketTimes checks a bucket of width w: it starts on a UTC boundary
// of w and ends after its start, at most w later (the bucket in progress
// may end early).
func checkBucketTimes(start, end time.Time, w time.Duration) error {
	if !start.Truncate(w).Equal(start) || !end.After(start) || end.After(start.Add(w)) {
		return fmt.Errorf("a bucket [%s, %s) is not one UTC %s", start.Format(time.RFC3339), end.Format(time.RFC3339), w)
	}
	return nil
}

// parseDecimal reads a non-negative decimal string exactly.
func parseDecimal(s string) (*big.Rat, error) {
	if s == "" || len(s) > 64 {
		return nil, fmt.Errorf("amount %q is not a decimal", s)
	}
	for _, c := range s {
		if (c < '0' || c > '9') && c != '.' && c != '-' {
			return nil, fmt.Errorf("amount %q is not a decimal", s)
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("amount %q is not a decimal", s)
	}
	return r, nil
}

// maxAmount bounds one cost, in USD.
var maxAmount = big.NewRat(1e12, 1)

func checkAmount(r *big.Rat) error {
	if new(big.Rat).Abs(r).Cmp(maxAmount) > 0 {
		return errors.New("an amount exceeds 1e12 USD")
	}
	return nil
}

func unixParam(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
