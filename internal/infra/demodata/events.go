package demodata

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"

	"github.com/aiusage/kit/spec"
)

// eventKind is a native event type of the generated provider and how it
// normalises. Some types are not in the specification's examples at all: a
// provider's native vocabulary is wider than any standard. The type is kept
// verbatim, but every action is one of the schema's enum, the closest in
// meaning (a rotated key is "Updated", an assigned seat "Updated"), as a
// clean provider maps its vocabulary.
type eventKind struct {
	typ, category, action string
	actors                []string // actor types, one drawn at random
	target                string   // target kind
	weight                int
}

// eventCatalogue holds the kinds drawn at random. Each actor type is the only
// choice of at least one kind, so every actor type occurs.
var eventCatalogue = []eventKind{
	{"user.login", spec.CategoryAuthentication, "SignedIn", []string{spec.ActorUser}, "session", 40},
	{"user.logout", spec.CategoryAuthentication, "SignedOut", []string{spec.ActorUser}, "session", 12},
	{"user.login.failed", spec.CategoryAuthentication, "Failed", []string{spec.ActorUser}, "session", 4},
	{"api_key.authenticated", spec.CategoryAuthentication, "SignedIn", []string{spec.ActorAPIKey}, "apiKey", 6},
	{"api_key.rotated", spec.CategoryAuthentication, "Updated", []string{spec.ActorUser, spec.ActorSystem}, "apiKey", 1},
	{"assistant.shared", spec.CategoryAccess, "Shared", []string{spec.ActorUser}, "assistant", 6},
	{"conversation.shared", spec.CategoryAccess, "Shared", []string{spec.ActorUser}, "conversation", 4},
	{"conversation.viewed", spec.CategoryAccess, "Viewed", []string{spec.ActorUser, spec.ActorAPIKey}, "conversation", 4},
	{"role.assigned", spec.CategoryAccess, "Updated", []string{spec.ActorUser, spec.ActorServiceAccount}, "user", 3},
	{"access.denied", spec.CategoryAccess, "Failed", []string{spec.ActorUser}, "assistant", 2},
	{"workspace.settings.updated", spec.CategoryConfiguration, "Updated", []string{spec.ActorUser}, "workspace", 3},
	{"assistant.updated", spec.CategoryConfiguration, "Updated", []string{spec.ActorUser}, "assistant", 6},
	{"model.enabled", spec.CategoryConfiguration, "Enabled", []string{spec.ActorUser}, "model", 2},
	{"model.disabled", spec.CategoryConfiguration, "Disabled", []string{spec.ActorUser}, "model", 1},
	{"file.uploaded", spec.CategoryDataMovement, "Imported", []string{spec.ActorUser}, "file", 8},
	{"file.exported", spec.CategoryDataMovement, "Exported", []string{spec.ActorUser, spec.ActorAPIKey}, "file", 4},
	{"conversation.exported", spec.CategoryDataMovement, "Exported", []string{spec.ActorServiceAccount, spec.ActorAPIKey}, "conversation", 3},
	{"knowledge.imported", spec.CategoryDataMovement, "Imported", []string{spec.ActorUser, spec.ActorServiceAccount}, "assistant", 2},
	{"api_key.created", spec.CategoryResourceLifecycle, "Created", []string{spec.ActorUser}, "apiKey", 1},
	{"api_key.revoked", spec.CategoryResourceLifecycle, "Deleted", []string{spec.ActorUser}, "apiKey", 1},
	{"project.created", spec.CategoryResourceLifecycle, "Created", []string{spec.ActorUser}, "project", 1},
	{"connector.enabled", spec.CategoryIntegration, "Enabled", []string{spec.ActorUser}, "connector", 3},
	{"connector.disabled", spec.CategoryIntegration, "Disabled", []string{spec.ActorUser}, "connector", 1},
	{"connector.sync.completed", spec.CategoryIntegration, "Updated", []string{spec.ActorServiceAccount}, "connector", 5},
	{"mcp.server.registered", spec.CategoryIntegration, "Created", []string{spec.ActorUser}, "skill", 1},
	{"tool.invoked", spec.CategoryIntegration, "Invoked", []string{spec.ActorUser}, "skill", 6},
	{"webhook.delivery.failed", spec.CategoryIntegration, "Failed", []string{spec.ActorSystem}, "webhook", 1},
	{"dlp.message.blocked", spec.CategoryPolicy, "Failed", []string{spec.ActorSystem}, "conversation", 4},
	{"policy.updated", spec.CategoryPolicy, "Updated", []string{spec.ActorUser}, "policy", 1},
	{"content.flagged", spec.CategoryPolicy, "", []string{spec.ActorSystem}, "conversation", 2},
	{"billing.invoice.paid", spec.CategoryOther, "", []string{spec.ActorSystem}, "invoice", 1},
	{"BILLING_PLAN_CHANGED", spec.CategoryOther, "Updated", []string{spec.ActorUser}, "plan", 1},
	{"usage.quota.warning", spec.CategoryOther, "", []string{spec.ActorSystem}, "workspace", 1},
	{"seat.assigned", spec.CategoryOther, "Updated", []string{spec.ActorUser, spec.ActorServiceAccount}, "user", 1},
}

var eventWeights, eventWeightSum = func() ([]int, int) {
	w := make([]int, len(eventCatalogue))
	for i, k := range eventCatalogue {
		w[i] = k.weight
	}
	return w, sumInts(w)
}()

var apiKeys = []struct{ id, name string }{
	{"key_live_3f9a", "ci-export"}, {"key_live_81c2", "bi-dashboard"}, {"key_live_d07e", "siem-forwarder"},
}

var serviceAccounts = []string{"svc_okta_scim", "svc_connector_sync", "svc_compliance_export"}

type eventGen struct {
	g *generator
	r *rand.Rand
	k uint32 // events made so far
	s uint32 // id salt
}

func (e *eventGen) event(at int64, typ, category, action string) spec.Event {
	id := timeID("evt_", at, mix32(e.k^e.s))
	e.k++
	return spec.Event{ID: id, OccurredAt: msTime(at), Type: typ, Category: category, Action: action}
}

func (e *eventGen) userActor(u int32) *spec.Actor {
	return &spec.Actor{Type: spec.ActorUser, ID: e.g.users[u].ID, Email: e.g.users[u].Email}
}

func (e *eventGen) actor(typ string) *spec.Actor {
	g, r := e.g, e.r
	switch typ {
	case spec.ActorUser:
		return e.userActor(g.pickUser(r))
	case spec.ActorAPIKey:
		return &spec.Actor{Type: spec.ActorAPIKey, ID: pick(r, apiKeys).id}
	case spec.ActorServiceAccount:
		id := pick(r, serviceAccounts)
		return &spec.Actor{Type: spec.ActorServiceAccount, ID: id, Email: slug(id) + "@" + g.domain}
	}
	return &spec.Actor{Type: spec.ActorSystem, ID: "system"}
}

// events passes every event to fn: assistants created within the window and
// archived, deleted conversations, bursts of user provisioning that share one
// instant, then cfg.Events events drawn from the catalogue (each kind once
// first, so every category occurs).
func (g *generator) events(fn func(any) error) error {
	e := &eventGen{g: g, r: newRand(g.seed, streamEvents), s: uint32(mix64(g.seed + streamEventSalt))}
	r := e.r
	for i := range g.asst {
		ap := &g.asst[i]
		if ap.created >= g.start {
			ev := e.event(ap.created, "assistant.created", spec.CategoryResourceLifecycle, "Created")
			if ap.owner >= 0 {
				ev.Actor = e.userActor(ap.owner)
			} else {
				ev.Actor = e.actor(spec.ActorSystem)
			}
			ev.Target = &spec.Target{Kind: "assistant", ID: ap.a.ID, Name: ap.a.Name}
			ev.Payload = obj("visibility", ap.a.Visibility, "model", ap.a.Model, "skills", len(ap.a.Skills))
			if err := fn(ev); err != nil {
				return err
			}
		}
		if ap.archived {
			// Archiving takes the assistant out of use without deleting it.
			ev := e.event(ap.archAt, "assistant.archived", spec.CategoryResourceLifecycle, "Disabled")
			if ap.owner >= 0 {
				ev.Actor = e.userActor(ap.owner)
			} else {
				ev.Actor = e.actor(spec.ActorSystem)
			}
			ev.Target = &spec.Target{Kind: "assistant", ID: ap.a.ID, Name: ap.a.Name}
			ev.Payload = obj("previousStatus", "active", "conversationCount", ap.convs)
			if err := fn(ev); err != nil {
				return err
			}
		}
	}
	for i := range g.convs {
		c := &g.convs[i]
		if c.deleted == 0 {
			continue
		}
		ev := e.event(c.deleted, "conversation.deleted", spec.CategoryResourceLifecycle, "Deleted")
		ev.Target = &spec.Target{Kind: "conversation", ID: g.convID(i)}
		if c.sweep {
			ev.Actor = &spec.Actor{Type: spec.ActorSystem, ID: "retention-policy"}
			ev.Payload = obj("reason", "retention", "policy", "delete-after-7-days-inactive")
		} else {
			ev.Actor = e.userActor(c.user)
			ev.Payload = obj("reason", "user_request")
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if len(g.users) > 0 {
		bursts := 1 + len(g.convs)/25000
		for b := 0; b < bursts; b++ {
			at := g.pickTime(r, g.start, g.end-1)
			size := int(between(r, 2, 20))
			typ := pick(r, []string{"scim.user.provisioned", "scim.user.updated"})
			action := "Created"
			if typ == "scim.user.updated" {
				action = "Updated"
			}
			for j := 0; j < size; j++ {
				u := g.pickUser(r)
				ev := e.event(at, typ, spec.CategoryResourceLifecycle, action)
				ev.Actor = &spec.Actor{Type: spec.ActorServiceAccount, ID: "svc_okta_scim", Email: "svc-okta-scim@" + g.domain}
				ev.Target = &spec.Target{Kind: "user", ID: g.users[u].ID, Name: g.users[u].Email}
				ev.Payload = obj("source", "okta", "externalId", hexID("00u", r.Uint32()), "department", g.users[u].Department, "batch", b+1)
				if err := fn(ev); err != nil {
					return err
				}
			}
		}
	}
	for j := 0; j < g.cfg.Events; j++ {
		kind := &eventCatalogue[j%len(eventCatalogue)]
		if j >= len(eventCatalogue) {
			kind = &eventCatalogue[weighted(r, eventWeights, eventWeightSum)]
		}
		ev := e.catalogued(kind)
		if err := fn(ev); err != nil {
			return err
		}
	}
	return nil
}

func (e *eventGen) catalogued(kind *eventKind) spec.Event {
	g, r := e.g, e.r
	at := g.pickTime(r, g.start, g.end-1)
	ev := e.event(at, kind.typ, kind.category, kind.action)
	if len(g.users) > 0 || kind.actors[0] != spec.ActorUser {
		ev.Actor = e.actor(pick(r, kind.actors))
	}
	var payload json.RawMessage
	switch kind.target {
	case "session":
		ev.Target = &spec.Target{Kind: "session", ID: hexID("sess_", r.Uint32())}
		ip := "10." + strconv.Itoa(r.IntN(256)) + "." + strconv.Itoa(r.IntN(256)) + "." + strconv.Itoa(1+r.IntN(254))
		reason := any(nil)
		if kind.action == "Failed" {
			reason = pick(r, []string{"invalid_password", "mfa_timeout", "account_locked"})
		}
		payload = obj("ip", ip, "userAgent", pick(r, []string{"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) Chrome/131.0", "Mozilla/5.0 (Windows NT 10.0) Edge/131.0", "AcmeDesktop/1.18.2"}), "method", pick(r, []string{"sso", "sso", "password"}), "idp", "okta", "reason", reason)
	case "apiKey":
		k := pick(r, apiKeys)
		ev.Target = &spec.Target{Kind: "apiKey", ID: k.id, Name: k.name}
		payload = obj("scopes", []string{"read:usage", "read:conversations"}, "lastFour", k.id[len(k.id)-4:])
	case "assistant":
		if len(g.asst) > 0 {
			ap := &g.asst[r.IntN(len(g.asst))]
			ev.Target = &spec.Target{Kind: "assistant", ID: ap.a.ID, Name: ap.a.Name}
		}
		switch kind.typ {
		case "assistant.shared":
			payload = obj("sharedWith", "group:"+pick(r, g.deptSlugs)+"-"+pick(r, regions), "role", pick(r, []string{"viewer", "editor"}))
		case "assistant.updated":
			payload = obj("changed", pick(r, [][]string{{"instructions"}, {"model"}, {"skills", "connectors"}, {"visibility"}}))
		case "knowledge.imported":
			payload = obj("files", 1+r.IntN(30), "source", pick(r, []string{"sharepoint", "google-drive", "upload"}))
		default:
			payload = obj("reason", "not_shared_with_user")
		}
	case "conversation":
		if len(g.convs) > 0 {
			ev.Target = &spec.Target{Kind: "conversation", ID: g.convID(r.IntN(len(g.convs)))}
		}
		switch kind.typ {
		case "dlp.message.blocked", "content.flagged":
			payload = obj("rule", pick(r, []string{"credit-card-number", "iban", "customer-pii", "source-code-secret"}), "matches", 1+r.IntN(4), "severity", pick(r, []string{"low", "medium", "high"}))
		case "conversation.exported":
			payload = obj("format", "jsonl", "destination", "s3://"+slug(g.cfg.Tenant)+"-compliance/exports/")
		default:
			payload = obj("via", pick(r, []string{"link", "workspace"}))
		}
	case "user":
		if len(g.users) > 0 {
			u := g.pickUser(r)
			ev.Target = &spec.Target{Kind: "user", ID: g.users[u].ID, Name: g.users[u].Email}
		}
		payload = obj("role", pick(r, []string{"member", "workspace_admin", "auditor"}), "seatType", pick(r, []string{"standard", "premium"}))
	case "workspace":
		ev.Target = &spec.Target{Kind: "workspace", ID: "ws_" + slug(g.cfg.Tenant), Name: title(slug(g.cfg.Tenant))}
		if kind.typ == "usage.quota.warning" {
			payload = obj("percent", pick(r, []int{80, 90, 100}), "quota", "monthly_tokens")
		} else {
			payload = obj("setting", pick(r, []string{"data_retention_days", "allowed_models", "file_uploads"}), "old", json.RawMessage("90"), "new", json.RawMessage("180"))
		}
	case "model":
		m := pick(r, models)
		ev.Target = &spec.Target{Kind: "model", ID: m.name, Name: m.name}
		payload = obj("provider", m.provider)
	case "file":
		f := pick(r, uploadFiles)
		ev.Target = &spec.Target{Kind: "file", ID: hexID("file_", r.Uint32()), Name: f.name}
		payload = obj("mimeType", f.mime, "sizeBytes", between(r, 2<<10, 40<<20), "format", pick(r, []string{"original", "csv", "pdf"}))
	case "project":
		ev.Target = &spec.Target{Kind: "project", ID: hexID("proj_", r.Uint32()), Name: pick(r, []string{"Q1 planning", "Migration", "RFP answers", "Onboarding"})}
		payload = obj("members", 2+r.IntN(20))
	case "connector":
		c := pick(r, allConnectors)
		ev.Target = &spec.Target{Kind: "connector", ID: hexID("conn_", r.Uint32()), Name: c.typ}
		if kind.typ == "connector.sync.completed" {
			payload = obj("connector", c.typ, "itemsSynced", r.IntN(5000), "durationMs", between(r, 800, 600000))
		} else {
			payload = obj("connector", c.typ, "scopes", c.scopes)
		}
	case "skill":
		s := pick(r, []skillDef{skJira, skGitHub, skSFDC, skZendesk, skConfl, skSnow, fnCustomer, fnTicket, fnSQL})
		ev.Target = &spec.Target{Kind: "skill", ID: s.id, Name: s.name}
		payload = obj("skillType", s.typ, "durationMs", between(r, 40, 9000), "ok", r.IntN(100) < 95)
	case "webhook":
		ev.Target = &spec.Target{Kind: "webhook", ID: hexID("wh_", r.Uint32()), Name: "https://hooks." + g.domain + "/ai"}
		payload = obj("attempt", 1+r.IntN(5), "statusCode", pick(r, []int{500, 502, 503, 504}))
	case "policy":
		ev.Target = &spec.Target{Kind: "policy", ID: hexID("pol_", r.Uint32()), Name: pick(r, []string{"No customer PII in prompts", "Approved models only", "Source code stays internal"})}
		payload = obj("mode", pick(r, []string{"block", "warn"}))
	case "invoice":
		ev.Target = &spec.Target{Kind: "invoice", ID: hexID("in_", r.Uint32()), Name: "Invoice " + msTime(at).Format("2006-01")}
		payload = obj("amountCents", between(r, 100000, 5000000), "currency", "USD", "status", "paid")
	case "plan":
		ev.Target = &spec.Target{Kind: "plan", ID: "plan_enterprise", Name: "Enterprise"}
		payload = obj("from", "business", "to", "enterprise", "seats", len(g.users))
	}
	ev.Payload = payload
	return ev
}
