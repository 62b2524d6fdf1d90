package spec

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// TimeLayout is the layout of every timestamp the kit writes: RFC 3339 in UTC
// with millisecond precision and an uppercase Z, for example
// 2026-01-02T03:04:05.678Z.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Time is a timestamp on the wire. It marshals as [TimeLayout] (UTC,
// milliseconds, uppercase Z) and unmarshals any RFC 3339 value, converting it to
// UTC. Use [CheckTimestamp] to insist that a received value was already UTC.
// The zero Time is omitted by fields tagged omitzero.
type Time struct{ time.Time }

// NewTime returns t in UTC truncated to milliseconds, the precision served.
func NewTime(t time.Time) Time { return Time{t.UTC().Truncate(time.Millisecond)} }

// TimePtr returns a pointer to NewTime(t).
func TimePtr(t time.Time) *Time {
	v := NewTime(t)
	return &v
}

// String formats t as [TimeLayout].
func (t Time) String() string { return t.UTC().Format(TimeLayout) }

// MarshalJSON implements [json.Marshaler].
func (t Time) MarshalJSON() ([]byte, error) {
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("spec: year %d outside the range of RFC 3339", y)
	}
	return []byte(`"` + t.String() + `"`), nil
}

// UnmarshalJSON implements [json.Unmarshaler]. It accepts any RFC 3339
// timestamp, whatever its offset, and stores it in UTC.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return errors.New("spec: timestamp must be a JSON string")
	}
	v, err := ParseTime(string(b[1 : len(b)-1]))
	if err != nil {
		return err
	}
	*t = Time{v}
	return nil
}

// rfc3339Syntax is the syntax ParseTime accepts, with uppercase T and Z and
// at most nine fractional digits (as the schemas): time.Parse alone also
// accepts a comma before the fraction, one-digit hours, more digits and
// offsets beyond 23:59. time.Parse checks the ranges of the fields.
var rfc3339Syntax = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`)

// ParseTime parses an RFC 3339 timestamp with any offset and returns it in UTC.
// It is the parser for query parameters such as updatedSince, which accept any
// offset. Lowercase t or z, a space separator and a missing offset are errors.
func ParseTime(s string) (time.Time, error) {
	if !rfc3339Syntax.MatchString(s) {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 timestamp such as 2026-01-02T03:04:05Z", s)
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 timestamp such as 2026-01-02T03:04:05Z", s)
	}
	return v.UTC(), nil
}

// CheckTimestamp reports whether s is an RFC 3339 timestamp in UTC written with
// an uppercase T and Z, as the AI usage data specification requires of every
// timestamp a provider sends. JSON Schema's date-time format alone accepts
// offsets and lowercase letters; this does not. It returns nil when s is valid
// and otherwise an error saying what is wrong.
func CheckTimestamp(s string) error {
	if _, err := ParseTime(s); err != nil {
		return err
	}
	if !strings.HasSuffix(s, "Z") {
		return fmt.Errorf("%q is not in UTC: write it with Z instead of an offset, for example 2026-01-02T03:04:05Z", s)
	}
	return nil
}

// CheckTimestampMillis is [CheckTimestamp] that also requires exactly three
// fractional digits (milliseconds), the format of the organisation and
// review-task APIs.
func CheckTimestampMillis(s string) error {
	if err := CheckTimestamp(s); err != nil {
		return err
	}
	if len(s) != len(TimeLayout) || s[19] != '.' {
		return fmt.Errorf("%q must have exactly three fractional digits (milliseconds), for example 2026-01-02T03:04:05.678Z", s)
	}
	return nil
}
