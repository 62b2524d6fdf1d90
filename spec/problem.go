package spec

import (
	"encoding/json"
	"fmt"
)

// ProblemContentType is the media type of a [Problem].
const ProblemContentType = "application/problem+json"

// Problem is an RFC 9457 problem details body, the error body of the AI usage
// data interface and the organisation API.
type Problem struct {
	Type     string         `json:"type"`
	Title    string         `json:"title"`
	Status   int            `json:"status"`
	Detail   string         `json:"detail,omitempty"`
	Instance string         `json:"instance,omitempty"`
	Errors   []ProblemField `json:"errors,omitempty"`
	// Extensions holds extension members (RFC 9457, section 3.2), such as the
	// agent named by a 409 of the organisation API. They are written beside
	// the standard members; a key that names a standard member is an error.
	Extensions map[string]any `json:"-"`
}

var problemMembers = map[string]bool{"type": true, "title": true, "status": true, "detail": true, "instance": true, "errors": true}

// MarshalJSON implements [json.Marshaler], merging Extensions.
func (p Problem) MarshalJSON() ([]byte, error) {
	type plain Problem // Extensions is tagged "-"
	for k := range p.Extensions {
		if problemMembers[k] {
			return nil, fmt.Errorf("spec: problem extension %q names a standard member", k)
		}
	}
	return marshalMerged(plain(p), p.Extensions)
}

// UnmarshalJSON implements [json.Unmarshaler], keeping extension members in
// Extensions.
func (p *Problem) UnmarshalJSON(b []byte) error {
	type plain Problem
	var std plain
	if err := json.Unmarshal(b, &std); err != nil {
		return err
	}
	*p = Problem(std)
	p.Extensions = nil
	var all map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for k := range problemMembers {
		delete(all, k)
	}
	if len(all) > 0 {
		p.Extensions = all
	}
	return nil
}

// ProblemField names a field, query parameter or header to blame.
type ProblemField struct {
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}
