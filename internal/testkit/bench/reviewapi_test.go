package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/app/server"
	"github.com/aiusage/kit/internal/infra/keyring"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/testkit/servicetest"
	"github.com/aiusage/kit/internal/testkit/webhooktest"
	"github.com/aiusage/kit/spec"
)

// reviewFixture is the whole service over a SQLite file, working its job
// queue, with one enterprise organisation (a limit no benchmark reaches), an
// agent holding ten instructions and an API key.
type reviewFixture struct {
	svc    *reviewapi.Service
	url    string
	agent  string
	secret string
}

func newReviewFixture(b *testing.B) *reviewFixture {
	b.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "service.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	orgs, err := org.NewStore(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	full, srv := servicetest.Serve(b, server.Config{DB: db, Orgs: orgs, Secrets: keyring.Ephemeral(),
		Review: reviewapi.Config{AllowPrivateWebhooks: true}})
	svc := full.Review()
	o, err := orgs.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Bench", Plan: org.PlanEnterprise, HourlyLimit: 1 << 30}, admin)
	if err != nil {
		b.Fatal(err)
	}
	agent, err := orgs.CreateAgent(ctx, o.ID, "bench agent", admin)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10 {
		c := benchInstruction(i, []string{agent.ID})
		if c.Trigger.Type == spec.TriggerSemantic {
			c.Trigger = spec.StringMatchTrigger([]string{fmt.Sprintf("codeword%d", i)}, false)
		}
		if _, err := orgs.CreateInstruction(ctx, o.ID, org.InstructionCreate(c), admin); err != nil {
			b.Fatal(err)
		}
	}
	key, err := orgs.CreateKey(ctx, org.KeyCreate{OrganisationID: o.ID, Name: "bench", Type: org.KeyTypeAPI}, admin)
	if err != nil {
		b.Fatal(err)
	}
	return &reviewFixture{svc: svc, url: srv.URL, agent: agent.ID, secret: key.Secret}
}

func (f *reviewFixture) post(b *testing.B, path, body string) []byte {
	req, _ := http.NewRequest(http.MethodPost, f.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b.Fatalf("POST %s: %d %s", path, resp.StatusCode, out)
	}
	return out
}

func (f *reviewFixture) taskBody(i int) string {
	return fmt.Sprintf(`{"agentId":%q,"request":{"model":"gpt-x","messages":[{"role":"user","content":"Request %d: please summarise the quarterly report for the team, nothing confidential in it."}]}}`, f.agent, i)
}

// BenchmarkReviewTaskCreate submits review tasks over HTTP, each evaluated
// at once against ten instructions, on SQLite. Target: at least 300 a
// second.
func BenchmarkReviewTaskCreate(b *testing.B) {
	f := newReviewFixture(b)
	i := 0
	for b.Loop() {
		f.post(b, "/review-tasks", f.taskBody(i))
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
}

// BenchmarkReviewWebhookLatency measures, for tasks approved by policy, the
// time from the decision (decision.decidedAt) to the task.completed webhook
// arriving at a receiver on loopback. Target: median under 200 ms.
func BenchmarkReviewWebhookLatency(b *testing.B) {
	f := newReviewFixture(b)
	rcv := webhooktest.NewReceiver(b, "")
	var hook spec.Webhook
	if err := json.Unmarshal(f.post(b, "/webhooks", fmt.Sprintf(`{"url":%q,"events":["task.completed"]}`, rcv.URL())), &hook); err != nil {
		b.Fatal(err)
	}
	rcv.SetSecret(hook.Secret)
	i := 0
	for b.Loop() {
		f.post(b, "/review-tasks", f.taskBody(i))
		i++
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := rcv.WaitAcknowledged(ctx, i)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
	var lat []float64
	for _, d := range rcv.Acknowledged() {
		var body spec.WebhookDelivery
		if err := json.Unmarshal(d.Body, &body); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, float64(d.ReceivedAt.Sub(body.Data.Decision.DecidedAt.Time).Microseconds())/1000)
	}
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], "median-ms")
	b.ReportMetric(lat[len(lat)*9/10], "p90-ms")
}
