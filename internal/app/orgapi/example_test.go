package orgapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/app/orgapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
)

// An administrator creates an organisation, an agent and an API key; an
// integration then creates an instruction with the key.
func Example() {
	ctx := context.Background()
	db, err := sqldb.Open(ctx, "sqlite::memory:")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	store, err := org.NewStore(ctx, db) // applies the migrations
	if err != nil {
		panic(err)
	}
	admin := org.Actor{Type: org.ActorAdmin, Name: "alice"}
	o, _ := store.CreateOrganisation(ctx, org.OrganisationCreate{Name: "Northwind"}, admin)
	agent, _ := store.CreateAgent(ctx, o.ID, "Support assistant", admin)
	key, _ := store.CreateKey(ctx, org.KeyCreate{OrganisationID: o.ID, Name: "ci-bot", Type: org.KeyTypeAPI}, admin)

	h, err := orgapi.NewHandler(store)
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	body := `{"agentType": "DataProtection", "title": "Block IBANs",
		"trigger": {"type": "Regex", "pattern": "\\bDE[0-9]{20}\\b"},
		"action": "Block", "criticality": "Low", "allowRedaction": true,
		"usedBy": ["` + agent.ID + `"]}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/organisations/"+o.ID+"/instructions", strings.NewReader(body))
	req.Header.Set("X-API-Key", key.Secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	fmt.Println(resp.Status)

	agents, _ := store.Agents(ctx, o.ID)
	fmt.Println(agents[0].Name, "holds", agents[0].InstructionCount, "instruction")
	trail, _ := store.Audit(ctx, o.ID, 0, 100)
	last := trail[len(trail)-1]
	fmt.Println(last.Action, "by", last.Actor.Name)
	// Output:
	// 201 Created
	// Support assistant holds 1 instruction
	// instruction.created by ci-bot
}
