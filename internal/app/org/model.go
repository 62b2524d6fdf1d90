package org

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/aiusage/kit/spec"
)

// Plan is an organisation's plan; it decides the organisation's hourly request
// limit on the review-task API, shared by all its keys.
type Plan string

// Plans.
const (
	PlanStandard   Plan = "standard"   // 1,000 requests an hour per organisation
	PlanBusiness   Plan = "business"   // 10,000 requests an hour per organisation
	PlanEnterprise Plan = "enterprise" // as configured (Organisation.HourlyLimit)
)

// Hourly request limits of the plans with a fixed limit.
const (
	StandardHourlyLimit = 1000
	BusinessHourlyLimit = 10000
)

// ParsePlan checks a plan name.
func ParsePlan(s string) (Plan, error) {
	switch p := Plan(s); p {
	case PlanStandard, PlanBusiness, PlanEnterprise:
		return p, nil
	}
	return "", fmt.Errorf("plan must be standard, business or enterprise, got %q", s)
}

// Organisation is an organisation as the service's administrators see it.
// The organisation API shows only its id and name ([spec.Organisation]).
type Organisation struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Plan Plan   `json:"plan"`
	// HourlyLimit is the configured limit of an enterprise plan, 0 otherwise.
	HourlyLimit int       `json:"hourlyLimit,omitempty"`
	CreatedAt   spec.Time `json:"createdAt"`
}

// RateLimit returns the organisation's hourly request limit on the
// review-task API: the requests of all its keys together, in any window of
// an hour (the review-task API counts them in a sliding window).
func (o Organisation) RateLimit() int {
	switch o.Plan {
	case PlanBusiness:
		return BusinessHourlyLimit
	case PlanEnterprise:
		return o.HourlyLimit
	}
	return StandardHourlyLimit
}

// OrganisationCreate is what an administrator gives to create an organisation.
type OrganisationCreate struct {
	Name string
	// Plan defaults to PlanStandard.
	Plan Plan
	// HourlyLimit is required (at least 1) with PlanEnterprise and must be 0
	// with the other plans.
	HourlyLimit int
}

// OrganisationUpdate is a change of an organisation's name, plan or hourly
// limit, as the operator makes it: a field left nil keeps its value, with
// one exception: a move from the enterprise plan to another drops the
// hourly limit. The result must pass what [OrganisationCreate.Validate]
// checks.
type OrganisationUpdate struct {
	Name *string
	Plan *Plan
	// HourlyLimit is the enterprise plan's limit; required when an
	// organisation moves to the enterprise plan.
	HourlyLimit *int
}

// KeyType is the type of an API key.
type KeyType string

// Key types. Only API keys may use the organisation and review-task APIs.
const (
	KeyTypeAPI       KeyType = "API"
	KeyTypeIngestion KeyType = "Ingestion"
)

// ParseKeyType checks a key type name.
func ParseKeyType(s string) (KeyType, error) {
	switch t := KeyType(s); t {
	case KeyTypeAPI, KeyTypeIngestion:
		return t, nil
	}
	return "", fmt.Errorf("key type must be API or Ingestion, got %q", s)
}

// APIKey is an API key as listings show it: never the secret, only its last
// four characters.
type APIKey struct {
	ID             string     `json:"id"`
	OrganisationID string     `json:"organisationId"`
	Name           string     `json:"name"`
	Type           KeyType    `json:"type"`
	Last4          string     `json:"last4"`
	CreatedAt      spec.Time  `json:"createdAt"`
	ExpiresAt      *spec.Time `json:"expiresAt"` // null: valid until revoked
	RevokedAt      *spec.Time `json:"revokedAt"`
}

// Status is "active", "expired" or "revoked" at now.
func (k APIKey) Status(now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return "revoked"
	case k.ExpiresAt != nil && !now.Before(k.ExpiresAt.Time):
		return "expired"
	}
	return "active"
}

// CreatedKey is a key just created, with its secret: the only time the
// secret is seen.
type CreatedKey struct {
	APIKey
	Secret string `json:"secret"`
}

// KeyCreate is what an administrator gives to create a key.
type KeyCreate struct {
	OrganisationID string
	Name           string
	// Type defaults to KeyTypeIngestion, as the organisation API says.
	Type KeyType
	// ExpiresAt is the expiry, which must be in the future. Nil means the
	// default, DefaultExpiry (one year ahead), unless NoExpiry is set.
	ExpiresAt *time.Time
	// NoExpiry makes a key valid until revoked. It excludes ExpiresAt.
	NoExpiry bool
}

// DefaultExpiry returns the default expiry of a key created at now: one
// year ahead.
func DefaultExpiry(now time.Time) time.Time { return now.AddDate(1, 0, 0) }

// Principal is an authenticated API key. [Store.Authenticate] also returns
// the principal of a revoked or expired key, beside its error.
type Principal struct {
	KeyID          string
	KeyName        string
	OrganisationID string
	Type           KeyType
}

// Actor is who made a change: an API key, an administrator working with the
// aiusage admin commands, or a person signed in to the dashboard.
type Actor struct {
	Type string `json:"type"` // ActorAPIKey, ActorAdmin, ActorUser or ActorIdP
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
}

// Actor types.
const (
	ActorAPIKey = "apiKey"
	ActorAdmin  = "admin"
	// ActorUser is a person of the organisation signed in to the dashboard
	// (package people), by user id and name.
	ActorUser = "user"
	// ActorIdP is an organisation's identity provider (package sso), by
	// its issuer URL as Name: it creates and updates the people it signs in.
	ActorIdP = "identityProvider"
)

// Actor returns the actor of changes made with the key.
func (p Principal) Actor() Actor { return Actor{Type: ActorAPIKey, ID: p.KeyID, Name: p.KeyName} }

// Audit actions.
const (
	AuditOrganisationCreated = "organisation.created"
	AuditOrganisationUpdated = "organisation.updated"
	AuditAgentCreated        = "agent.created"
	AuditKeyCreated          = "key.created"
	AuditKeyRevoked          = "key.revoked"
	AuditInstructionCreated  = "instruction.created"
	AuditInstructionUpdated  = "instruction.updated"
	AuditInstructionDeleted  = "instruction.deleted"
	AuditPriceSet            = "price.set"
	AuditPriceDeleted        = "price.deleted"
	// AuditTelemetrySettingsSet is a change of an organisation's telemetry
	// settings (whether prompt text is stored).
	AuditTelemetrySettingsSet = "telemetry.settings.set"
	// AuditTimeZoneSet is a change of the time zone an organisation's
	// dashboard shows times in.
	AuditTimeZoneSet = "organisation.timezone.set"
)

// AuditRecord is one change in an organisation's audit trail.
type AuditRecord struct {
	// Seq numbers the organisation's records from 1 in the order their
	// changes committed: a reader that has seen Seq n never later finds a
	// new record below n, so Audit(after=n) follows the trail.
	Seq            int64     `json:"seq"`
	OrganisationID string    `json:"organisationId"`
	At             spec.Time `json:"at"`
	Actor          Actor     `json:"actor"`
	Action         string    `json:"action"`
	ResourceType   string    `json:"resourceType"`
	ResourceID     string    `json:"resourceId"`
	// Before and After are the resource before and after the change; null
	// before a creation and after a deletion.
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// InstructionQuery selects a page of instructions. Empty filters match all.
type InstructionQuery struct {
	Search      string // case-insensitive substring of the title or the trigger's text, pattern or values
	TriggerType string
	Action      string
	AgentID     string
	AgentType   string
	Page        int // from 1
	PageSize    int // 1..MaxPageSize
}

// Page sizes of the instruction list.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
	// MaxSearchLength bounds the search parameter, in characters.
	MaxSearchLength = 1000
)
