package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Resource names one of the four resource types of the AI usage data
// interface.
type Resource string

// The resources, in the order a sync visits them.
const (
	Conversations Resource = "conversations"
	Assistants    Resource = "assistants"
	Events        Resource = "events"
	Usage         Resource = "usage"
)

// Resources lists every resource, in the order a sync visits them.
var Resources = []Resource{Conversations, Assistants, Events, Usage}

// ParseResource returns the resource named s.
func ParseResource(s string) (Resource, error) {
	for _, r := range Resources {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("unknown resource %q (want conversations, assistants, events or usage)", s)
}

// Query asks a [Source] for one page of a resource. Zero fields are left out
// of the request.
type Query struct {
	// Cursor continues a walk: the NextCursor of the previous page, sent with
	// the same filters as the request that returned it.
	Cursor string
	// Limit is the page size asked for; 0 leaves it to the source.
	Limit int
	// UpdatedSince (conversations, assistants) asks for records with
	// updatedAt >= UpdatedSince.
	UpdatedSince time.Time
	// OccurredAfter (events) asks for events with occurredAt > OccurredAfter.
	OccurredAfter time.Time
	// StartAt, EndAt, Granularity and GroupBy select usage buckets.
	StartAt, EndAt time.Time
	Granularity    string
	GroupBy        []string
}

// Page is one page of records, each exactly as the source sent it.
type Page struct {
	// Records are the items of the page, in the order received.
	Records []json.RawMessage
	// HasMore reports that the source announced more records.
	HasMore bool
	// NextCursor continues the walk; "" when the source sent none.
	NextCursor string
	// Paginated reports that the answer carried the pagination members of the
	// envelope (hasMore, nextCursor). A source without cursor pagination sends
	// everything at once and leaves it false.
	Paginated bool
}

// Source is a transport to one provider: the sync engine asks it for pages
// and never learns how they travel. [Client] is the REST transport;
// mcp.Source reads a provider's MCP tools and consumer/export its scheduled
// export of NDJSON files.
//
// Fetch returns the page of r that q selects. Errors carry the kinds of the
// provider package (provider.ErrInvalid for a rejected request or cursor,
// provider.ErrUnauthorized, provider.ErrForbidden, provider.ErrNotFound,
// provider.ErrUnsupported when the source does not offer r,
// provider.ErrUnavailable when it is temporarily down); a Source retries
// transient failures itself before it returns one. Fetch must be safe for
// concurrent use.
type Source interface {
	Fetch(ctx context.Context, r Resource, q Query) (Page, error)
}
