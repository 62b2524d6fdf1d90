// Package reqcheck checks requests against the kit's JSON schemas (spec's
// schema files) and reports what fails as a [spec.Error] of kind
// spec.ErrInvalid naming every field to blame. The JSON APIs check the bodies
// they receive with it, and the domain packages the requests they are given,
// however these arrived (a JSON body, a dashboard form, a command's flags), so
// the same request fails with the same words everywhere.
package reqcheck

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/aiusage/kit/spec"
)

// DetailBody is the detail of an error about what a request holds.
const DetailBody = "The request body is invalid."

// Invalid returns a spec.ErrInvalid error naming one field of a request.
func Invalid(field, format string, a ...any) *spec.Error {
	return &spec.Error{Kind: spec.ErrInvalid, Detail: DetailBody,
		Fields: []spec.ProblemField{{Field: field, Message: fmt.Sprintf(format, a...)}}}
}

// JSON checks body, one JSON value, against the spec schema named schema. A
// failure is a *spec.Error of kind spec.ErrInvalid naming every field to
// blame, dotted ("trigger.pattern"), with the array items on the way
// ("usedBy", "item 2"); a body that is not JSON names the field "body".
func JSON(schema string, body []byte) error {
	findings, err := spec.Validate(schema, body)
	if err != nil {
		return Invalid("body", "is not valid JSON")
	}
	if spec.Valid(findings) {
		return nil
	}
	e := &spec.Error{Kind: spec.ErrInvalid, Detail: DetailBody}
	for _, f := range findings {
		if f.Level != spec.LevelError {
			continue
		}
		field, where := fieldOf(f.Pointer)
		msg := f.Message
		if where != "" {
			msg = where + ": " + msg
		}
		e.Fields = append(e.Fields, spec.ProblemField{Field: field, Message: msg})
	}
	return e
}

// Value checks v, encoded as JSON, against the spec schema named schema,
// with the errors of [JSON].
func Value(schema string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return JSON(schema, b)
}

// fieldOf turns a JSON pointer into the dotted name of the field
// ("/trigger/pattern" -> "trigger.pattern") and the array positions on the
// way ("/usedBy/2" -> "usedBy", "item 2").
func fieldOf(ptr string) (field, where string) {
	if ptr == "" {
		return "body", ""
	}
	var names, idx []string
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if tok == "" {
			tok = `""` // a property with an empty name
		}
		if _, err := strconv.Atoi(tok); err == nil && len(names) > 0 {
			idx = append(idx, tok)
			continue
		}
		names = append(names, tok)
	}
	if len(idx) > 0 {
		where = "item " + strings.Join(idx, ", ")
	}
	return strings.Join(names, "."), where
}
