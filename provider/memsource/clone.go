package memsource

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"github.com/aiusage/kit/spec"
)

// The clone functions copy everything a record refers to, so that stored
// records share no memory with the caller's.

func cloneConversation(c spec.Conversation) spec.Conversation {
	c.User = cloneUser(c.User)
	c.Assistant = clonePtr(c.Assistant)
	c.Parameters = cloneParameters(c.Parameters)
	c.Messages = slices.Clone(c.Messages)
	c.Tools = slices.Clone(c.Tools)
	c.Attachments = slices.Clone(c.Attachments)
	c.Usage = clonePtr(c.Usage)
	c.Metadata = bytes.Clone(c.Metadata)
	return c
}

func cloneAssistant(a spec.Assistant) spec.Assistant {
	a.Owner = cloneUser(a.Owner)
	a.Parameters = cloneParameters(a.Parameters)
	a.Skills = slices.Clone(a.Skills)
	if a.Connectors != nil {
		cs := make([]spec.Connector, len(a.Connectors))
		for i, c := range a.Connectors {
			c.Scopes = slices.Clone(c.Scopes)
			cs[i] = c
		}
		a.Connectors = cs
	}
	a.Knowledge = slices.Clone(a.Knowledge)
	a.Usage = clonePtr(a.Usage)
	return a
}

func cloneEvent(e spec.Event) spec.Event {
	e.Actor = clonePtr(e.Actor)
	e.Target = clonePtr(e.Target)
	e.Payload = bytes.Clone(e.Payload)
	return e
}

func cloneUser(u *spec.User) *spec.User {
	if u == nil {
		return nil
	}
	v := *u
	v.Groups = slices.Clone(u.Groups)
	return &v
}

func cloneParameters(p *spec.Parameters) *spec.Parameters {
	if p == nil {
		return nil
	}
	v := spec.Parameters{
		Temperature: clonePtr(p.Temperature),
		TopP:        clonePtr(p.TopP),
		MaxTokens:   clonePtr(p.MaxTokens),
	}
	if p.Extra != nil {
		v.Extra = maps.Clone(p.Extra)
		for k, raw := range v.Extra {
			v.Extra[k] = json.RawMessage(bytes.Clone(raw))
		}
	}
	return &v
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// The norm functions bring the timestamps of a record the source owns to
// UTC at millisecond precision, the precision served.

func normTime(t spec.Time) spec.Time {
	if t.IsZero() {
		return spec.Time{}
	}
	return spec.NewTime(t.Time)
}

func normConversation(c spec.Conversation) spec.Conversation {
	c.StartedAt = normTime(c.StartedAt)
	c.UpdatedAt = normTime(c.UpdatedAt)
	c.DeletedAt = normTime(c.DeletedAt)
	for i := range c.Messages {
		c.Messages[i].CreatedAt = normTime(c.Messages[i].CreatedAt)
	}
	return c
}

func normAssistant(a spec.Assistant) spec.Assistant {
	a.CreatedAt = normTime(a.CreatedAt)
	a.UpdatedAt = normTime(a.UpdatedAt)
	if a.Usage != nil {
		a.Usage.LastUsedAt = normTime(a.Usage.LastUsedAt)
	}
	return a
}

func normEvent(e spec.Event) spec.Event {
	e.OccurredAt = normTime(e.OccurredAt)
	return e
}
