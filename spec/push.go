package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// PushTypeRecords is the type of every [PushDelivery].
const PushTypeRecords = "records"

// PushResources lists the resources a [PushDelivery] may carry, in the
// order of the REST paths that serve them.
var PushResources = []string{"conversations", "assistants", "events", "usage"}

// MaxPushRecords is the most records one [PushDelivery] holds, as many as
// the largest REST page.
const MaxPushRecords = 1000

// PushDelivery is the body a provider POSTs to a push receiver (schema
// push-delivery): records of one resource, each the JSON the REST API
// serves for it (a deleted conversation as its tombstone), signed per the
// Standard Webhooks specification (package
// [github.com/aiusage/kit/spec/webhook]).
type PushDelivery struct {
	// Type is always [PushTypeRecords].
	Type string `json:"type"`
	// Resource is one of [PushResources].
	Resource string `json:"resource"`
	// Records holds 1 to [MaxPushRecords] records of Resource.
	Records []json.RawMessage `json:"records"`
	// AsOf is when the pusher read the records from its data: the version
	// of the records' content. A usage bucket has no updatedAt, so a
	// receiver keeps, per bucket, the content with the latest AsOf, and a
	// delivery that arrives late cannot overwrite a newer count. Optional;
	// without it, the last delivery received wins.
	AsOf Time `json:"asOf,omitzero"`
}

// PushRecordSchema returns the name of the schema of each record of a push
// delivery of resource, and false when resource is not one of
// [PushResources].
func PushRecordSchema(resource string) (string, bool) {
	switch resource {
	case "conversations":
		return "conversation", true
	case "assistants":
		return "assistant", true
	case "events":
		return "event", true
	case "usage":
		return "usage-bucket", true
	}
	return "", false
}

// DecodePushDelivery decodes the body of a push delivery and checks its
// envelope: one JSON object whose type is [PushTypeRecords], whose resource
// is one of [PushResources] and whose records are an array of 1 to
// [MaxPushRecords] JSON values. It does not check the records: a receiver
// validates each against [PushRecordSchema] and keeps the valid ones. The
// error wraps [ErrInvalid] and says, in a sentence, what is wrong.
func DecodePushDelivery(body []byte) (PushDelivery, error) {
	var d PushDelivery
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&d); err != nil {
		return d, fmt.Errorf("the body is not a push delivery: %v: %w", err, ErrInvalid)
	}
	if _, err := dec.Token(); err != io.EOF {
		return d, fmt.Errorf("the body holds more than one JSON value: %w", ErrInvalid)
	}
	switch {
	case d.Type != PushTypeRecords:
		return d, fmt.Errorf("type is %q; a push delivery's type is %q: %w", d.Type, PushTypeRecords, ErrInvalid)
	case !slices.Contains(PushResources, d.Resource):
		return d, fmt.Errorf("resource is %q; want one of %s: %w", d.Resource, strings.Join(PushResources, ", "), ErrInvalid)
	case len(d.Records) == 0:
		return d, fmt.Errorf("records is missing or empty; a delivery holds 1 to %d records: %w", MaxPushRecords, ErrInvalid)
	case len(d.Records) > MaxPushRecords:
		return d, fmt.Errorf("records holds %d records; a delivery holds at most %d: %w", len(d.Records), MaxPushRecords, ErrInvalid)
	}
	return d, nil
}
