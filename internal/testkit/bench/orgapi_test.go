package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/orgapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// orgFixture is an organisation API over a SQLite file, with one
// organisation, its agents and an API key.
type orgFixture struct {
	store  *org.Store
	srv    *httptest.Server
	org    org.Organisation
	agents []spec.Agent
	secret string
}

var admin = org.Actor{Type: org.ActorAdmin, Name: "bench"}

func newOrgFixture(b *testing.B, agents int) *orgFixture {
	b.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "service.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	st, err := org.NewStore(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	f := &orgFixture{store: st}
	if f.org, err = st.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Bench"}, admin); err != nil {
		b.Fatal(err)
	}
	for i := range agents {
		a, err := st.CreateAgent(ctx, f.org.ID, fmt.Sprintf("agent %d", i), admin)
		if err != nil {
			b.Fatal(err)
		}
		f.agents = append(f.agents, a)
	}
	k, err := st.CreateKey(ctx, org.KeyCreate{OrganisationID: f.org.ID, Name: "bench", Type: org.KeyTypeAPI}, admin)
	if err != nil {
		b.Fatal(err)
	}
	f.secret = k.Secret
	h, err := orgapi.NewHandler(st)
	if err != nil {
		b.Fatal(err)
	}
	f.srv = httptest.NewServer(h)
	b.Cleanup(f.srv.Close)
	return f
}

// benchInstruction is the i-th instruction of the fill: a mix of the three
// trigger types, with titles and terms drawn from a small vocabulary so that
// searches match some and miss most.
func benchInstruction(i int, usedBy []string) spec.InstructionCreate {
	words := []string{"iban", "passport", "salary", "merger", "customer", "diagnosis", "password", "contract"}
	w := words[i%len(words)]
	c := spec.InstructionCreate{AgentType: spec.AgentTypeDataProtection, Action: spec.ActionBlock,
		Criticality: spec.CriticalityLow, UsedBy: usedBy,
		Title: fmt.Sprintf("Rule %05d about %s data in prompts", i, w)}
	switch i % 3 {
	case 0:
		c.Trigger = spec.RegexTrigger(fmt.Sprintf(`\b%s-%d-[0-9]{4}\b`, w, i), false)
	case 1:
		c.Trigger = spec.StringMatchTrigger([]string{fmt.Sprintf("%s code %d", w, i), fmt.Sprintf("term%05d", i)}, false)
	default:
		c.Trigger = spec.SemanticTrigger(fmt.Sprintf("Talk about %s number %d with people outside the team", w, i))
	}
	return c
}

func (f *orgFixture) get(b *testing.B, path string) []byte {
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
	req.Header.Set("X-API-Key", f.secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return body
}

// BenchmarkInstructionList lists over HTTP from 10,000 instructions of one
// organisation in SQLite. Target: under 50 ms per request with search.
func BenchmarkInstructionList(b *testing.B) {
	const n = 10000
	f := newOrgFixture(b, 120)
	ctx := context.Background()
	for i := range n {
		var usedBy []string
		if i < 100*len(f.agents) {
			usedBy = []string{f.agents[i%len(f.agents)].ID}
		}
		if _, err := f.store.CreateInstruction(ctx, f.org.ID, org.InstructionCreate(benchInstruction(i, usedBy)), admin); err != nil {
			b.Fatal(err)
		}
	}
	base := "/organisations/" + f.org.ID + "/instructions"
	for _, c := range []struct{ name, query, want string }{
		{"search-rare", "?search=TERM04210", `"totalCount":1,`},
		{"search-common", "?search=Passport&pageSize=100", `"totalCount":1250,`},
		{"search-miss", "?search=nothing-matches-this", `"totalCount":0,`},
		{"search-and-filters", "?search=salary&triggerType=Regex&action=Block&pageSize=50", `"totalCount":416,`},
		{"agent", "?agentId=" + f.agents[7].ID, `"totalCount":84,`},
		{"no-filter-last-page", "?page=100&pageSize=100", `"totalCount":10000,`},
	} {
		b.Run(c.name, func(b *testing.B) {
			if body := f.get(b, base+c.query); !strings.Contains(string(body), c.want) {
				b.Fatalf("%s: want %s in %.300s", c.query, c.want, body)
			}
			b.ResetTimer()
			for b.Loop() {
				f.get(b, base+c.query)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/list")
		})
	}
}

// BenchmarkInstructionCreate creates instructions over HTTP in SQLite, one
// client and four concurrent clients. Target: at least 500 creates/s.
func BenchmarkInstructionCreate(b *testing.B) {
	for _, clients := range []int{1, 4} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			f := newOrgFixture(b, 40)
			url := f.srv.URL + "/organisations/" + f.org.ID + "/instructions"
			var mu sync.Mutex
			next := 0
			body := func() string {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				// Each agent holds at most 100; spread, and leave the
				// rest unassigned.
				var usedBy []string
				if i < 100*len(f.agents) {
					usedBy = []string{f.agents[i%len(f.agents)].ID}
				}
				c := benchInstruction(i, usedBy)
				return fmt.Sprintf(`{"agentType":%q,"title":%q,"trigger":{"type":"StringMatch","values":[%q]},"action":"Block","criticality":"Low","usedBy":[%s]}`,
					c.AgentType, c.Title, c.Title, quoteAll(usedBy))
			}
			work := make(chan struct{})
			var wg sync.WaitGroup
			errc := make(chan error, clients)
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range work {
						req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body()))
						req.Header.Set("X-API-Key", f.secret)
						req.Header.Set("Content-Type", "application/json")
						resp, err := http.DefaultClient.Do(req)
						if err != nil {
							errc <- err
							return
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusCreated {
							errc <- fmt.Errorf("create: %d", resp.StatusCode)
							return
						}
					}
				}()
			}
			b.ResetTimer()
			for b.Loop() {
				work <- struct{}{}
			}
			close(work)
			wg.Wait()
			select {
			case err := <-errc:
				b.Fatal(err)
			default:
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
		})
	}
}

func quoteAll(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = `"` + id + `"`
	}
	return strings.Join(q, ",")
}
