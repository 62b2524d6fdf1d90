package otlpwire

import (
	"context"
	"iter"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// PartsFunc takes one export request decoded a part at a time, so that a
// large request is never held whole in memory: each part is an export
// request of the handler's signal holding one resource and one scope of
// the request with up to [PartItems] of their items (data points' metrics,
// log records or spans), in the order of the body, so that the items of
// all parts are those of the request. parts yields each part with a nil
// error, or, where the body stops being a valid request, a nil part and a
// *spec.Error of kind spec.ErrInvalid, and then nothing more. The function
// must read every part before it stores anything, and store nothing when
// a part is an error: the handler answers that error whatever the
// function returns. Otherwise as [IngestFunc]; each part is the
// function's to keep.
type PartsFunc func(ctx context.Context, parts iter.Seq2[proto.Message, error]) (Partial, error)

// PartItems is the most items (metrics, log records or spans) one part of
// a [PartsFunc] holds.
const PartItems = 500

// The field numbers the parts split at, the same in the three signals:
// the request's resource_metrics, resource_logs or resource_spans; a
// resource's scope_*; a scope's metrics, log_records or spans.
const (
	fieldResources protowire.Number = 1
	fieldScopes    protowire.Number = 2
	fieldItems     protowire.Number = 2
)

// protobufParts returns the parts of body, a protobuf export request of
// signal, as a [PartsFunc] takes them. It only splits the body at the
// boundaries of messages (protowire); every message is decoded by
// proto.Unmarshal into the generated types, so that a body is valid in
// parts exactly when it is valid whole, and its parts hold what it holds.
func protobufParts(signal Signal, body []byte) iter.Seq2[proto.Message, error] {
	return func(yield func(proto.Message, error) bool) {
		req := signal.newRequest().ProtoReflect()
		fail := func(err error) { yield(nil, invalidProtobuf(req.Interface(), err)) }
		rest, resources, err := split(body, fieldResources)
		if err != nil {
			fail(err)
			return
		}
		if err := unmarshalDepth(rest, req.Interface(), 0); err != nil {
			fail(err)
			return
		}
		resFD := req.Descriptor().Fields().ByNumber(fieldResources)
		for _, rb := range resources {
			res := req.NewField(resFD).List().NewElement().Message()
			rest, scopes, err := split(rb, fieldScopes)
			if err == nil {
				err = unmarshalDepth(rest, res.Interface(), 1)
			}
			if err != nil {
				fail(err)
				return
			}
			for _, sb := range scopes {
				if !scopeParts(signal, res, sb, yield, fail) {
					return
				}
			}
		}
	}
}

// scopeParts yields the parts of sb, a scope of resource res, and reports
// whether to go on.
func scopeParts(signal Signal, res protoreflect.Message, sb []byte, yield func(proto.Message, error) bool, fail func(error)) bool {
	scopeFD := res.Descriptor().Fields().ByNumber(fieldScopes)
	scope := res.NewField(scopeFD).List().NewElement().Message()
	rest, items, err := split(sb, fieldItems)
	if err == nil {
		err = unmarshalDepth(rest, scope.Interface(), 2)
	}
	if err != nil {
		fail(err)
		return false
	}
	itemFD := scope.Descriptor().Fields().ByNumber(fieldItems)
	// A scope without items is one part; one with items, those of its items.
	for first := true; first || len(items) > 0; first = false {
		n := min(len(items), PartItems)
		part := signal.newRequest().ProtoReflect()
		r := shallowCopy(res, scopeFD)
		s := shallowCopy(scope, itemFD)
		list := s.Mutable(itemFD).List()
		for _, ib := range items[:n] {
			item := list.NewElement()
			if err := unmarshalDepth(ib, item.Message().Interface(), 3); err != nil {
				fail(err)
				return false
			}
			list.Append(item)
		}
		items = items[n:]
		r.Mutable(scopeFD).List().Append(protoreflect.ValueOfMessage(s))
		part.Mutable(part.Descriptor().Fields().ByNumber(fieldResources)).List().Append(protoreflect.ValueOfMessage(r))
		if !yield(part.Interface(), nil) {
			return false
		}
	}
	return true
}

// shallowCopy returns a new message with the fields of m but skip, sharing
// their values.
func shallowCopy(m protoreflect.Message, skip protoreflect.FieldDescriptor) protoreflect.Message {
	c := m.New()
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd != skip {
			c.Set(fd, v)
		}
		return true
	})
	c.SetUnknown(m.GetUnknown())
	return c
}

// split returns the fields of the protobuf message b other than num as
// bytes (rest, to be decoded as the message), and the values of those that
// are (subs, each a message), without copying.
func split(b []byte, num protowire.Number) (rest []byte, subs [][]byte, err error) {
	for len(b) > 0 {
		n, t, k := protowire.ConsumeTag(b)
		if k < 0 {
			return nil, nil, protowire.ParseError(k)
		}
		m := protowire.ConsumeFieldValue(n, t, b[k:])
		if m < 0 {
			return nil, nil, protowire.ParseError(m)
		}
		if n == num && t == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[k:])
			subs = append(subs, v)
		} else {
			rest = append(rest, b[:k+m]...)
		}
		b = b[k+m:]
	}
	return rest, subs, nil
}

// unmarshalDepth decodes b into m, a message depth levels inside the
// request, with what is left of the recursion limit of a whole request.
func unmarshalDepth(b []byte, m proto.Message, depth int) error {
	return proto.UnmarshalOptions{RecursionLimit: protowire.DefaultRecursionLimit - depth}.Unmarshal(b, m)
}
