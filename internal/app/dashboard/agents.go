package dashboard

import (
	"net/http"
	"strings"

	"github.com/aiusage/kit/spec"
)

type agentsData struct {
	Agents []spec.Agent
	Max    int // spec.MaxInstructionsPerAgent
}

func (d *Dashboard) renderAgents(w http.ResponseWriter, r *http.Request, status int, p *pageData) error {
	agents, err := d.cfg.Orgs.Agents(r.Context(), viewerOf(r).Organisation.ID)
	if err != nil {
		return err
	}
	p.Title, p.Nav, p.Data = "Agents", "agents", agentsData{Agents: agents, Max: spec.MaxInstructionsPerAgent}
	d.render(w, r, status, "agents", p)
	return nil
}

// agents lists the organisation's agents with their instruction counts.
func (d *Dashboard) agents(w http.ResponseWriter, r *http.Request) error {
	p := &pageData{}
	if r.URL.Query().Get("done") == "created" {
		p.Notice = "The agent is created. Assign instructions to it in their forms."
	}
	return d.renderAgents(w, r, http.StatusOK, p)
}

// createAgent creates an agent with the store's rules for its name.
func (d *Dashboard) createAgent(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	name := r.PostForm.Get("name")
	_, err := d.cfg.Orgs.CreateAgent(r.Context(), v.Organisation.ID, strings.TrimSpace(name), v.User.Actor())
	if msg, status, ok := clientMessage(err); ok {
		return d.renderAgents(w, r, status, &pageData{Error: msg, Fields: map[string]string{"name": name}})
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/agents?done=created", http.StatusSeeOther)
	return nil
}
