package tools

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// attrs holds merged attributes: resource < scope < record, the later layer
// winning, so a resource attribute copied onto a record is no conflict.
type attrs map[string]*commonpb.AnyValue

// merge merges the layers of attributes, a later layer winning.
func merge(layers ...[]*commonpb.KeyValue) attrs {
	n := 0
	for _, l := range layers {
		n += len(l)
	}
	return mergeInto(make(attrs, n), layers...)
}

// mergeInto is [merge] into a, emptied first: a map reused from record to
// record, which none of them keeps.
func mergeInto(a attrs, layers ...[]*commonpb.KeyValue) attrs {
	clear(a)
	for _, l := range layers {
		for _, kv := range l {
			if kv.GetValue() != nil {
				a[kv.GetKey()] = kv.GetValue()
			}
		}
	}
	return a
}

// str returns the attribute as a string: a string verbatim, a number or
// boolean formatted, anything else (arrays, maps, bytes) empty.
func (a attrs) str(key string) string {
	v := a[key]
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	}
	return ""
}

// first returns the first non-empty string of the keys.
func (a attrs) first(keys ...string) string {
	for _, k := range keys {
		if s := a.str(k); s != "" {
			return s
		}
	}
	return ""
}

// maxExact bounds the numbers taken as counts: beyond it a float64 no
// longer holds every integer, and nothing real counts that many tokens.
const maxExact = 1 << 53

// float returns the attribute as a finite number, leniently: an int, a
// double, a decimal string, or a "true"/"false" string or boolean (1/0).
func (a attrs) float(key string) (float64, bool) {
	var f float64
	switch x := a[key].GetValue().(type) {
	case *commonpb.AnyValue_IntValue:
		f = float64(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		f = x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		f = boolFloat(x.BoolValue)
	case *commonpb.AnyValue_StringValue:
		s := strings.TrimSpace(x.StringValue)
		if b, err := strconv.ParseBool(s); err == nil && (s == "true" || s == "false") {
			f = boolFloat(b)
			break
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, false
		}
		f = v
	default:
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > maxExact {
		return 0, false
	}
	return f, true
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// count returns the attribute as a token count: a non-negative whole number
// (rounded), leniently parsed. A negative or unparseable value is absent.
func (a attrs) count(key string) (int64, bool) {
	f, ok := a.float(key)
	if !ok || f < 0 {
		return 0, false
	}
	return int64(math.Round(f)), true
}

// countOf returns the first present count of the keys, or 0.
func (a attrs) countOf(keys ...string) (int64, bool) {
	for _, k := range keys {
		if n, ok := a.count(k); ok {
			return n, true
		}
	}
	return 0, false
}

// ident is who and what a record is about.
type ident struct {
	tool, version, model, email, device, session, department, team string
}

func identOf(a attrs) ident {
	id := ident{
		tool:       a.str("service.name"),
		version:    a.first("service.version", "app.version"),
		model:      a.first("model", "gen_ai.response.model", "gen_ai.request.model"),
		email:      strings.ToLower(strings.TrimSpace(a.str("user.email"))),
		device:     a.first("user.id", "installation.id"),
		session:    a.first("session.id", "conversation.id", "gen_ai.conversation.id"),
		department: a.str("department"),
		team:       a.first("team.id", "team"),
	}
	gatewayIdent(a, &id)
	return id
}

// The metadata.* attributes LiteLLM sets on its spans from the virtual
// key and the request.
const (
	litellmEndUser   = "metadata.user_api_key_end_user_id"
	litellmKeyEmail  = "metadata.user_api_key_user_email"
	litellmKeyUserID = "metadata.user_api_key_user_id"
	litellmTeamAlias = "metadata.user_api_key_team_alias"
	litellmTeamID    = "metadata.user_api_key_team_id"
	litellmKeyAlias  = "metadata.user_api_key_alias"
	litellmKeyHash   = "metadata.user_api_key_hash"
)

// gatewayIdent fills in what id lacks from a gateway's attributes
// (LiteLLM's metadata.*): the person from the end user, else the key's
// user, where it is an email (the end user is the person an application
// serves through a shared key; the key's user, its owner); the team from
// the key's team alias, else its id, and the department from that team
// when none is set; the device from the key's alias, else its hash, a
// label of the key, never a person. Attributes the tool or the
// administrator set win.
func gatewayIdent(a attrs, id *ident) {
	if id.email == "" {
		for _, k := range []string{litellmEndUser, litellmKeyEmail, litellmKeyUserID} {
			if e := strings.ToLower(strings.TrimSpace(a.str(k))); isEmail(e) {
				id.email = e
				break
			}
		}
	}
	if id.team == "" {
		id.team = a.first(litellmTeamAlias, litellmTeamID)
		if id.department == "" {
			id.department = id.team
		}
	}
	if id.device == "" {
		id.device = a.first(litellmKeyAlias, litellmKeyHash)
	}
}

// isEmail reports whether s looks like an email address: one @ with text
// on both sides, a dot in the domain, no spaces. It tells an email apart
// from the ids gateways also put in user fields; it does not validate.
func isEmail(s string) bool {
	local, domain, ok := strings.Cut(s, "@")
	return ok && local != "" && !strings.ContainsAny(s, " \t") && !strings.Contains(domain, "@") &&
		strings.Contains(domain, ".") && !strings.HasPrefix(domain, ".") && !strings.HasSuffix(domain, ".")
}

// usage returns a Usage of the identity, without key, time and counts.
func (id ident) usage(origin Origin, source string) Usage {
	return Usage{
		Tool: id.tool, ToolVersion: id.version, Model: id.model, Email: id.email, Device: id.device,
		SessionID: id.session, Department: id.department, Team: id.team, Origin: origin, Source: source,
	}
}

// key returns an idempotency key: the kind and a hash of the parts, each
// length-prefixed so that no two lists of parts collide.
func key(kind string, parts ...string) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return kind + ":" + hex.EncodeToString(h.Sum(nil)[:16])
}

// hashKey returns a key from a hash of the messages, marshalled
// deterministically: the key of a record with no identifier of its own.
func hashKey(kind string, msgs ...proto.Message) string {
	parts := make([]string, len(msgs))
	opts := proto.MarshalOptions{Deterministic: true}
	for i, m := range msgs {
		b, _ := opts.Marshal(m) // an unmarshalled message always marshals; an error leaves the part empty
		parts[i] = string(b)
	}
	return key(kind, parts...)
}

// canonical returns a stable encoding of an attribute list: the merged
// attributes sorted by key, each value marshalled deterministically.
func canonical(a attrs) string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	opts := proto.MarshalOptions{Deterministic: true}
	for _, k := range keys {
		v, _ := opts.Marshal(a[k])
		b.WriteString(strconv.Itoa(len(k)))
		b.WriteByte(':')
		b.WriteString(k)
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.Write(v)
	}
	return b.String()
}

// unixNano returns the time of nanoseconds since the epoch in UTC, the zero
// time for 0.
func unixNano(ns uint64) time.Time {
	if ns == 0 || ns > math.MaxInt64 {
		return time.Time{}
	}
	return time.Unix(0, int64(ns)).UTC()
}

// eventTime returns the record's event.timestamp attribute when it parses
// (RFC 3339), else the fallback.
func eventTime(a attrs, fallback time.Time) time.Time {
	if s := a.str("event.timestamp"); s != "" {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.UTC()
		}
	}
	return fallback
}

// jsonValue returns the AnyValue as a plain Go value for JSON: arrays and
// maps as such, bytes as base64 (encoding/json's []byte).
func jsonValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		if math.IsNaN(x.DoubleValue) || math.IsInf(x.DoubleValue, 0) {
			return nil
		}
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_BytesValue:
		return x.BytesValue
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, len(x.ArrayValue.GetValues()))
		for i, e := range x.ArrayValue.GetValues() {
			out[i] = jsonValue(e)
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		out := make(map[string]any, len(x.KvlistValue.GetValues()))
		for _, kv := range x.KvlistValue.GetValues() {
			out[kv.GetKey()] = jsonValue(kv.GetValue())
		}
		return out
	}
	return nil
}

// text returns the attribute as text: a string verbatim, anything else as
// its JSON.
func (a attrs) text(key string) string {
	v, ok := a[key]
	if !ok {
		return ""
	}
	if s, ok := v.GetValue().(*commonpb.AnyValue_StringValue); ok {
		return s.StringValue
	}
	b, err := json.Marshal(jsonValue(v))
	if err != nil || string(b) == "null" {
		return ""
	}
	return string(b)
}
