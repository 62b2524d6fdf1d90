package spec

import "encoding/json"

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
