package spec

import (
	"bytes"
	"encoding/json"
)

// Nullable is a field of a PATCH body that distinguishes omitted (Set false),
// null (Set true, Null true) and a value. Tag it omitzero so that an omitted
// field stays omitted when encoded.
type Nullable[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// Null returns a Nullable holding an explicit null.
func Null[T any]() Nullable[T] { return Nullable[T]{Set: true, Null: true} }

// Some returns a Nullable holding v.
func Some[T any](v T) Nullable[T] { return Nullable[T]{Set: true, Value: v} }

// IsZero reports whether the field was omitted.
func (n Nullable[T]) IsZero() bool { return !n.Set }

// Ptr returns nil for null and a pointer to the value otherwise.
func (n Nullable[T]) Ptr() *T {
	if n.Null {
		return nil
	}
	v := n.Value
	return &v
}

// MarshalJSON implements [json.Marshaler].
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if !n.Set || n.Null {
		return []byte("null"), nil
	}
	return json.Marshal(n.Value)
}

// UnmarshalJSON implements [json.Unmarshaler]. It is only called when the
// field is present, so it always sets Set.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		n.Null = true
		var zero T
		n.Value = zero
		return nil
	}
	n.Null = false
	return json.Unmarshal(b, &n.Value)
}
