package httpx

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aiusage/kit/spec"
)

// QueryStyle is how one API reads its query parameters and words their
// errors. The zero value reads every known parameter once, refuses a value
// that is not valid UTF-8, lets an empty value through, and answers a
// [*QueryError] with the default messages below; each API sets what its
// clients have always been answered, so that a message never changes when
// its parser does.
type QueryStyle struct {
	// Invalid builds the error about param with message. Nil builds a
	// [*QueryError].
	Invalid func(param, message string) error

	// NamePrefix starts every message the reader words with the
	// parameter's name and a space ("limit must be ..."), for APIs whose
	// messages are read without the field beside them. The message of a
	// query string that cannot be parsed at all is never prefixed.
	NamePrefix bool

	// RejectEmpty makes an empty value ("limit=") an error: "is empty; give
	// a value or leave the parameter out". Otherwise an empty value is
	// given: [QueryReader.String] returns it, [QueryReader.Enum] and
	// [QueryReader.Time] take it as no filter (what a form's empty choice
	// sends), and [QueryReader.Int] refuses it, as it is not an integer.
	RejectEmpty bool

	// AllowInvalidUTF8 passes a value that is not valid UTF-8 on to the
	// typed checks, whose bad-value messages then quote it. Otherwise such a
	// value is an error: "is not valid UTF-8".
	AllowInvalidUTF8 bool

	// Quote writes a client's value into the default bad-value messages. Nil
	// quotes it as %q does.
	Quote func(value string) string

	// BadInt words the message for a value of [QueryReader.Int] that is not
	// an integer from lo to hi; hi is math.MaxInt when there is no upper
	// bound. Nil words it as: must be an integer from 1 to 100, got "x";
	// or, without an upper bound: must be an integer of at least 0, got "x".
	BadInt func(lo, hi int, value string) string

	// BadEnum words the message for a value of [QueryReader.Enum] that is
	// none of allowed. Nil words it as: must be one of a, b, got "x".
	BadEnum func(allowed []string, value string) string

	// BadTime words the message for a value of [QueryReader.Time] that
	// [spec.ParseTime] refuses. Nil words it as: must be an RFC 3339
	// timestamp such as 2026-01-02T03:04:05Z, got "x"; followed, when the
	// value holds a space, by the hint that a "+" in a query string means a
	// space, since an offset such as +02:00 sent unencoded arrives as " 02:00".
	BadTime func(value string) string
}

// QueryReader reads the known parameters of one query string, each once, in
// the order its caller asks for them. The first error is kept, as
// [bufio.Scanner] keeps its own: once a parameter is bad, later reads return
// nothing and leave their destinations alone, so the error [QueryReader.Err]
// returns names the first bad parameter in the caller's order of checks.
// Parameters never read are ignored.
type QueryReader struct {
	values url.Values
	style  QueryStyle
	err    error
}

// ReadQuery returns a reader of the raw query string, parsed strictly by
// [ParseQuery]. A query string that cannot be parsed is the reader's first
// error, built by the style from the [*QueryError]'s parameter and message.
func ReadQuery(raw string, style QueryStyle) *QueryReader {
	values, err := ParseQuery(raw)
	r := &QueryReader{values: values, style: style}
	if err != nil {
		qe := err.(*QueryError)
		r.err = style.invalid(qe.Param, qe.Message)
	}
	return r
}

// NewQueryReader returns a reader of values already parsed, as behind
// [StrictQuery].
func NewQueryReader(values url.Values, style QueryStyle) *QueryReader {
	return &QueryReader{values: values, style: style}
}

// Err returns the first error of the reads so far, or nil.
func (r *QueryReader) Err() error { return r.err }

// Fail records an error about the parameter name, with the message format
// words (prefixed with the name when the style says so), unless an earlier
// error is recorded already. It is for the checks the reader does not make
// itself, such as a UUID or a list.
func (r *QueryReader) Fail(name, format string, a ...any) {
	if r.err == nil {
		r.err = r.style.invalid(name, r.style.prefix(name, fmt.Sprintf(format, a...)))
	}
}

// fail records message, the reader's own words about name.
func (r *QueryReader) fail(name, message string) {
	r.Fail(name, "%s", message)
}

// String returns the value of the parameter name and whether it was given.
// Given more than once, not valid UTF-8 or empty (each as the style says),
// it is an error, and String returns "", false.
func (r *QueryReader) String(name string) (string, bool) {
	if r.err != nil {
		return "", false
	}
	vs, ok := r.values[name]
	switch {
	case !ok:
		return "", false
	case len(vs) > 1:
		r.fail(name, fmt.Sprintf("is given %d times; give it once", len(vs)))
	case vs[0] == "" && r.style.RejectEmpty:
		r.fail(name, "is empty; give a value or leave the parameter out")
	case !r.style.AllowInvalidUTF8 && !utf8.ValidString(vs[0]):
		r.fail(name, "is not valid UTF-8")
	default:
		return vs[0], true
	}
	return "", false
}

// Int sets *dst to the value of the parameter name, a decimal integer from
// lo to hi (math.MaxInt for no upper bound), and reports whether it did.
// Any other value, the empty one included, is an error worded by the
// style's BadInt.
func (r *QueryReader) Int(name string, dst *int, lo, hi int) bool {
	v, ok := r.String(name)
	if !ok {
		return false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		r.fail(name, r.style.badInt(lo, hi, v))
		return false
	}
	*dst = n
	return true
}

// Enum sets *dst to the value of the parameter name, which must be one of
// allowed, and reports whether it did. An empty value, where the style lets
// one through, is no choice: *dst is left alone. Any other value is an error
// worded by the style's BadEnum.
func (r *QueryReader) Enum(name string, dst *string, allowed ...string) bool {
	v, ok := r.String(name)
	if !ok || v == "" {
		return false
	}
	if !slices.Contains(allowed, v) {
		r.fail(name, r.style.badEnum(allowed, v))
		return false
	}
	*dst = v
	return true
}

// Time sets *dst to the value of the parameter name, an RFC 3339 timestamp
// read by [spec.ParseTime] (so in UTC), and reports whether it did. An empty
// value, where the style lets one through, is no bound: *dst is left alone.
// Any other value is an error worded by the style's BadTime.
func (r *QueryReader) Time(name string, dst *time.Time) bool {
	v, ok := r.String(name)
	if !ok || v == "" {
		return false
	}
	t, err := spec.ParseTime(v)
	if err != nil {
		r.fail(name, r.style.badTime(v))
		return false
	}
	*dst = t
	return true
}

// invalid builds the error about param with message.
func (s *QueryStyle) invalid(param, message string) error {
	if s.Invalid == nil {
		return &QueryError{Param: param, Message: message}
	}
	return s.Invalid(param, message)
}

// prefix starts message with name when the style says so.
func (s *QueryStyle) prefix(name, message string) string {
	if s.NamePrefix {
		return name + " " + message
	}
	return message
}

// quote writes a client's value into a default message.
func (s *QueryStyle) quote(v string) string {
	if s.Quote == nil {
		return strconv.Quote(v)
	}
	return s.Quote(v)
}

func (s *QueryStyle) badInt(lo, hi int, v string) string {
	switch {
	case s.BadInt != nil:
		return s.BadInt(lo, hi, v)
	case hi == math.MaxInt:
		return fmt.Sprintf("must be an integer of at least %d, got %s", lo, s.quote(v))
	}
	return fmt.Sprintf("must be an integer from %d to %d, got %s", lo, hi, s.quote(v))
}

func (s *QueryStyle) badEnum(allowed []string, v string) string {
	if s.BadEnum != nil {
		return s.BadEnum(allowed, v)
	}
	return fmt.Sprintf("must be one of %s, got %s", strings.Join(allowed, ", "), s.quote(v))
}

func (s *QueryStyle) badTime(v string) string {
	if s.BadTime != nil {
		return s.BadTime(v)
	}
	hint := ""
	if strings.Contains(v, " ") {
		hint = ` (a "+" in a query string means a space: send an offset's + as %2B)`
	}
	return fmt.Sprintf("must be an RFC 3339 timestamp such as 2026-01-02T03:04:05Z, got %s%s", s.quote(v), hint)
}
