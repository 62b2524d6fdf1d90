// Package vendortest holds local fakes of the OpenAI and Anthropic
// administration usage APIs, for tests of package vendorusage and of what
// wires it: each answers in exactly the vendor's shapes (paging by bucket
// limits and next_page, null for ungrouped dimensions, empty buckets, users
// paging) from data the test sets, with fault injection and the totals to
// compare a collected view with.
//
//	f := vendortest.NewOpenAI()
//	defer f.Close()
//	f.AddUser("user_1", "Ann@example.com")
//	f.AddUsage(vendortest.Usage{Hour: h, Model: "gpt-4o", User: "user_1", Input: 100, Output: 20, Requests: 1})
//	src, _ := vendorusage.NewOpenAI(vendorusage.Config{BaseURL: f.URL, Key: f.Key})
package vendortest

import (
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"
)

// Usage is the usage of one hour and one combination of the vendor's
// dimensions; "" is no value (null in the answers). AddUsage adds the
// counts of rows with the same hour and dimensions.
type Usage struct {
	// Hour is the start of the hour (truncated to one).
	Hour time.Time
	// Model, User (OpenAI user_id, Anthropic account_id), APIKey,
	// Project (OpenAI project_id, Anthropic workspace_id), ServiceTier and,
	// for OpenAI, Batch.
	Model, User, APIKey, Project, ServiceTier string
	Batch                                     bool
	// Requests are OpenAI's num_model_requests (the Anthropic fake sends
	// none).
	Requests int64
	// Uncached is the input not read from a cache: OpenAI's input_tokens
	// minus input_cached_tokens, Anthropic's uncached_input_tokens.
	Uncached int64
	// CacheRead is OpenAI's input_cached_tokens, Anthropic's
	// cache_read_input_tokens.
	CacheRead int64
	// CacheWrite5m and CacheWrite1h are Anthropic's cache_creation tokens
	// (the OpenAI fake sends none).
	CacheWrite5m, CacheWrite1h int64
	Output                     int64
	// AudioInput and AudioOutput (OpenAI; parts of Uncached and Output)
	// and WebSearches (Anthropic) are sent but not collected.
	AudioInput, AudioOutput, WebSearches int64
}

// Cost is a cost of one day.
type Cost struct {
	// Day is the day (truncated to a UTC day).
	Day time.Time
	// Project is OpenAI's project_id, Anthropic's workspace_id; "" is null.
	Project string
	// LineItem is OpenAI's line_item ("gpt-4o, input"), Anthropic's
	// description; Model is Anthropic's model ("" for none).
	LineItem, Model string
	// USD is the amount in dollars, a decimal string; the Anthropic fake
	// sends it in cents, as Anthropic does.
	USD string
}

// Totals are sums over the fake's data, what a collected view must show:
// what the vendor sends, so the OpenAI fake's count no cache writes and the
// Anthropic fake's no requests.
type Totals struct {
	Requests, Uncached, CacheRead, CacheWrite, Output int64
	// Input is Uncached + CacheRead + CacheWrite.
	Input int64
	// Cost is the exact sum of the costs, in USD.
	Cost *big.Rat
}

// CostFloat is Cost as a float64.
func (t Totals) CostFloat() float64 {
	f, _ := t.Cost.Float64()
	return f
}

// Request is a request the fake received.
type Request struct {
	Method, Path string
	Query        map[string][]string
	Header       http.Header
	At           time.Time
}

// Server is a fake vendor API on a local httptest server.
type Server struct {
	// URL is the base address to configure (no /v1).
	URL string
	// Key is the Admin key it accepts.
	Key string

	vendor string
	srv    *httptest.Server

	mu       sync.Mutex
	usage    []Usage
	costs    []Cost
	users    []user
	fails    []fail
	revoked  string // the message of a revoked key; "" while valid
	redirect string // base address every request is redirected to
	requests []Request
	now      func() time.Time
}

type user struct{ id, email string }

type fail struct {
	status     int
	retryAfter string
}

// NewOpenAI returns a fake of OpenAI's organisation usage, costs and users
// endpoints. Close it when done.
func NewOpenAI() *Server { return newServer("openai", "sk-admin-test-0123456789") }

// NewAnthropic returns a fake of Anthropic's usage report, cost report and
// users endpoints. Close it when done.
func NewAnthropic() *Server { return newServer("anthropic", "sk-ant-admin01-test-0123456789") }

func newServer(vendor, key string) *Server {
	s := &Server{vendor: vendor, Key: key, now: time.Now}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }

// AddUsage adds usage rows.
func (s *Server) AddUsage(rows ...Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range rows {
		s.addUsage(u)
	}
}

func (s *Server) addUsage(u Usage) {
	u.Hour = u.Hour.UTC().Truncate(time.Hour)
	for i, x := range s.usage {
		if sameDims(x, u) {
			for _, p := range []struct{ dst, src *int64 }{{&x.Requests, &u.Requests}, {&x.Uncached, &u.Uncached},
				{&x.CacheRead, &u.CacheRead}, {&x.CacheWrite5m, &u.CacheWrite5m}, {&x.CacheWrite1h, &u.CacheWrite1h},
				{&x.Output, &u.Output}, {&x.AudioInput, &u.AudioInput}, {&x.AudioOutput, &u.AudioOutput}, {&x.WebSearches, &u.WebSearches}} {
				*p.dst += *p.src
			}
			s.usage[i] = x
			return
		}
	}
	s.usage = append(s.usage, u)
}

func sameDims(a, b Usage) bool {
	return a.Hour.Equal(b.Hour) && a.Model == b.Model && a.User == b.User && a.APIKey == b.APIKey &&
		a.Project == b.Project && a.ServiceTier == b.ServiceTier && a.Batch == b.Batch
}

// Revise replaces all usage of the hour holding hour with rows (late usage
// counted, a dimension set gone), as the vendors revise recent buckets.
func (s *Server) Revise(hour time.Time, rows ...Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := hour.UTC().Truncate(time.Hour)
	s.usage = slices.DeleteFunc(s.usage, func(u Usage) bool { return u.Hour.Equal(h) })
	for _, u := range rows {
		u.Hour = h
		s.addUsage(u)
	}
}

// AddCost adds costs. It panics on an amount that is not a decimal.
func (s *Server) AddCost(costs ...Cost) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range costs {
		if _, ok := new(big.Rat).SetString(c.USD); !ok {
			panic(fmt.Sprintf("vendortest: cost %q is not a decimal", c.USD))
		}
		c.Day = c.Day.UTC().Truncate(24 * time.Hour)
		s.costs = append(s.costs, c)
	}
}

// ReviseCosts replaces all costs of the day holding day with costs.
func (s *Server) ReviseCosts(day time.Time, costs ...Cost) {
	d := day.UTC().Truncate(24 * time.Hour)
	s.mu.Lock()
	s.costs = slices.DeleteFunc(s.costs, func(c Cost) bool { return c.Day.Equal(d) })
	s.mu.Unlock()
	for i := range costs {
		costs[i].Day = d
	}
	s.AddCost(costs...)
}

// AddUser adds a member of the organisation to the users endpoint.
func (s *Server) AddUser(id, email string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users = append(s.users, user{id, email})
}

// FailNext makes the next request answer status with the vendor's error
// body, and a retry-after header when retryAfter is not "". Calls queue.
func (s *Server) FailNext(status int, retryAfter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails = append(s.fails, fail{status, retryAfter})
}

// Revoke makes every later request answer 401 with the vendor's message
// for a bad key.
func (s *Server) Revoke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked = "Incorrect API key provided: sk-admin***"
	if s.vendor == "anthropic" {
		s.revoked = "invalid x-api-key"
	}
}

// Restore undoes Revoke and RedirectTo.
func (s *Server) Restore() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked, s.redirect = "", ""
}

// RedirectTo makes every later request answer 307 Temporary Redirect to the
// same path and query on base (another host, say).
func (s *Server) RedirectTo(base string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.redirect = base
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Totals sums the usage of the hours and the costs of the days that start
// in [from, until); a zero until is no end.
func (s *Server) Totals(from, until time.Time) Totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := func(t time.Time) bool { return !t.Before(from) && (until.IsZero() || t.Before(until)) }
	t := Totals{Cost: new(big.Rat)}
	for _, u := range s.usage {
		if !in(u.Hour) {
			continue
		}
		if s.vendor == "openai" {
			t.Requests += u.Requests
		}
		t.Uncached += u.Uncached
		t.CacheRead += u.CacheRead
		if s.vendor == "anthropic" {
			t.CacheWrite += u.CacheWrite5m + u.CacheWrite1h
		}
		t.Output += u.Output
	}
	t.Input = t.Uncached + t.CacheRead + t.CacheWrite
	for _, c := range s.costs {
		if in(c.Day) {
			v, _ := new(big.Rat).SetString(c.USD)
			t.Cost.Add(t.Cost, v)
		}
	}
	return t
}
