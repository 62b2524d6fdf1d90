package consumer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aiusage/kit/consumer/internal/jsonvalue"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// schemaOf names the schema each resource's records must match.
var schemaOf = map[Resource]string{
	Conversations: "conversation",
	Assistants:    "assistant",
	Events:        "event",
	Usage:         "usage-bucket",
}

// maxReason bounds the quarantine reason kept for a record.
const maxReason = 2000

// parsed is a received record after its checks: either rec is set, or
// reason says why the record is quarantined.
type parsed struct {
	rec    Record
	reason string
	id     string
	// noUpdatedAt reports a conversation or assistant without updatedAt.
	noUpdatedAt bool
	// exact is the record's Time before truncation to milliseconds, what
	// the provider's filters compare.
	exact time.Time
}

// Limits beyond the schemas, so that every record the engine stores can be
// indexed on every database (PostgreSQL refuses index entries over about
// 2.7 KB) and summed in the collected view without overflow.
const (
	maxDimensionLength = 256
	maxMetric          = 1 << 50
	maxCost            = 1e15
)

// parseRecord validates raw against the schema of r (in lenient mode:
// values outside an extensible enum are kept, as the spec allows additions)
// and extracts what the store indexes.
func parseRecord(r Resource, raw json.RawMessage) parsed {
	if !utf8.Valid(raw) {
		return parsed{reason: "not valid UTF-8", id: digestID(raw)}
	}
	inst, err := jsonvalue.Decode(raw)
	if err != nil {
		return parsed{reason: "not JSON: " + err.Error(), id: digestID(raw)}
	}
	obj, _ := inst.(map[string]any)
	id, _ := obj["id"].(string)
	p := parsed{id: id}
	if id == "" || !storable(id) || len(id) > provider.MaxIDLength {
		p.id = digestID(raw)
	}
	findings, err := spec.ValidateValue(schemaOf[r], inst, spec.WithMode(spec.Lenient))
	if err != nil {
		p.reason = err.Error()
		return p
	}
	if !spec.Valid(findings) {
		p.reason = reasonOf(findings)
		return p
	}
	p.rec.JSON = raw
	exact := func(name string) time.Time {
		s, _ := obj[name].(string)
		if s == "" {
			return time.Time{}
		}
		t, err := spec.ParseTime(s) // the schema checked the format
		if err != nil {
			return time.Time{}
		}
		return t.UTC()
	}
	ts := func(name string) time.Time { return exact(name).Truncate(time.Millisecond) }
	switch r {
	case Conversations:
		p.rec.ID = id
		p.rec.StartedAt = ts("startedAt")
		p.exact = exact("updatedAt")
		if p.exact.IsZero() {
			p.noUpdatedAt = true
			p.exact = exact("startedAt")
		}
		p.rec.Time = p.exact.Truncate(time.Millisecond)
		_, p.rec.Deleted = obj["deletedAt"]
		p.rec.Refs = refsOf(obj)
	case Assistants:
		p.rec.ID = id
		p.exact = exact("updatedAt")
		if p.exact.IsZero() {
			p.noUpdatedAt = true
			p.exact = exact("createdAt")
		}
		p.rec.Time = p.exact.Truncate(time.Millisecond)
	case Events:
		p.rec.ID = id
		p.exact = exact("occurredAt")
		p.rec.Time = p.exact.Truncate(time.Millisecond)
		p.rec.Category, _ = obj["category"].(string)
	case Usage:
		b := &BucketKey{Start: ts("startAt"), End: ts("endAt")}
		b.Granularity, _ = obj["granularity"].(string)
		dims, _ := obj["dimensions"].(map[string]any)
		key := []any{b.Granularity, b.Start.Format(millisLayout)}
		vals := map[string]*string{
			spec.DimensionModel: &b.Model, spec.DimensionAssistantID: &b.AssistantID,
			spec.DimensionUserID: &b.UserID, spec.DimensionDepartment: &b.Department,
		}
		for _, d := range spec.Dimensions {
			v, ok := dims[d].(string)
			if !ok {
				key = append(key, nil)
				continue
			}
			b.Grouped = append(b.Grouped, d)
			*vals[d] = v
			key = append(key, v)
		}
		for _, v := range []string{b.Model, b.AssistantID, b.UserID, b.Department} {
			if len(v) > maxDimensionLength {
				return parsed{id: digestID(raw), reason: fmt.Sprintf("/dimensions: a value is %d bytes long; at most %d are kept", len(v), maxDimensionLength)}
			}
		}
		// The id of a bucket is a digest of its key (granularity, start,
		// dimensions), short enough for any index.
		k, _ := json.Marshal(key) // strings and nils only
		p.rec.ID = "bucket:" + digestID(k)[len("sha256:"):]
		p.id = p.rec.ID
		p.rec.Time = b.Start
		p.exact = b.Start
		p.rec.Bucket = b
		if reason := checkMetrics(obj["metrics"]); reason != "" {
			return parsed{id: p.id, reason: reason}
		}
	}
	if len(p.rec.ID) > provider.MaxIDLength && r != Usage {
		return parsed{id: p.id, reason: fmt.Sprintf("/id: %d bytes long; ids are at most %d bytes", len(p.rec.ID), provider.MaxIDLength)}
	}
	if len(p.rec.Category) > maxDimensionLength {
		return parsed{id: p.id, reason: fmt.Sprintf("/category: %d bytes long; at most %d are kept", len(p.rec.Category), maxDimensionLength)}
	}
	for _, s := range []string{p.rec.ID, p.rec.Category} {
		if !storable(s) {
			return parsed{id: p.id, reason: "an id, category or dimension holds a NUL character"}
		}
	}
	if b := p.rec.Bucket; b != nil && !(storable(b.Model) && storable(b.AssistantID) && storable(b.UserID) && storable(b.Department)) {
		return parsed{id: p.id, reason: "an id, category or dimension holds a NUL character"}
	}
	return p
}

// refsOf returns the user.id and assistant.id of a conversation decoded
// into obj, read as a store decoding its JSON into
// struct{ User struct{ ID any }; Assistant struct{ ID any } } with
// encoding/json would read them, so that the store need not decode the
// record a second time on its one writing goroutine. It returns nil
// (the store reads the JSON) where obj cannot tell: a member whose name
// matches "user", "assistant" or "id" only when case is ignored, which
// encoding/json also accepts.
func refsOf(obj map[string]any) *Refs {
	for k := range obj {
		if k != "user" && k != "assistant" && (strings.EqualFold(k, "user") || strings.EqualFold(k, "assistant")) {
			return nil
		}
	}
	var r Refs
	for name, dst := range map[string]*string{"user": &r.UserID, "assistant": &r.AssistantID} {
		v, ok := obj[name]
		if !ok || v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			// Not an object: decoding fails, and the store keeps neither.
			return &Refs{}
		}
		for k := range m {
			if k != "id" && strings.EqualFold(k, "id") {
				return nil
			}
		}
		*dst, _ = m["id"].(string)
	}
	return &r
}

// checkMetrics returns why a usage bucket's metrics cannot be kept, or "":
// integer metrics must be whole numbers up to 2^50, cost at most 1e15, so
// that sums over any grouping stay exact enough and never overflow.
func checkMetrics(v any) string {
	m, _ := v.(map[string]any)
	for _, k := range []string{"requests", "conversations", "activeUsers", "inputTokens", "outputTokens"} {
		f, ok := m[k].(float64)
		if !ok {
			continue
		}
		if f != math.Trunc(f) || f > maxMetric {
			return fmt.Sprintf("/metrics/%s: %v is not a whole number up to 2^50", k, f)
		}
	}
	if f, ok := m["cost"].(float64); ok && f > maxCost {
		return fmt.Sprintf("/metrics/cost: %v exceeds %g", f, maxCost)
	}
	return ""
}

// storable reports whether s can be an indexed column on every database:
// PostgreSQL text holds no NUL.
func storable(s string) bool { return !strings.ContainsRune(s, 0) }

const millisLayout = "2006-01-02T15:04:05.000Z"

func digestID(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func reasonOf(findings []spec.Finding) string {
	var b strings.Builder
	for _, f := range findings {
		if f.Level != spec.LevelError {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		ptr := f.Pointer
		if ptr == "" {
			ptr = "/"
		}
		fmt.Fprintf(&b, "%s: %s", ptr, f.Message)
		if b.Len() > maxReason {
			return b.String()[:maxReason] + "…"
		}
	}
	return b.String()
}
