package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// listPage is a list page read as strictly as the envelope schema reads it.
type listPage struct {
	Data    []json.RawMessage
	HasMore bool
	// NextCursor is nil when nextCursor is null or absent.
	NextCursor *string
}

// cursor returns nextCursor, or "" when there is none.
func (p listPage) cursor() string {
	if p.NextCursor == nil {
		return ""
	}
	return *p.NextCursor
}

// readPage reads a list envelope no more leniently than the envelope schema:
// a JSON object, in valid UTF-8, whose member names are matched exactly and
// appear once; data is an array (never null), hasMore a boolean, nextCursor
// absent, null or a string. Whether hasMore and nextCursor agree is left to
// the caller (ENV-03); whether the items match their schema to ENV-02.
//
// Every check reads pages through readPage, so that no check reads more
// into a body than the schema allows: encoding/json alone would take null
// for an empty array, a missing hasMore for false, and "HasMore" for
// hasMore.
func readPage(body []byte) (listPage, error) {
	var p listPage
	if !utf8.Valid(body) {
		return p, errors.New("the body is not valid UTF-8")
	}
	members, err := readObject(body)
	if err != nil {
		return p, err
	}
	return pageOf(members)
}

// pageOf is readPage over the members of an object already read.
func pageOf(members map[string]json.RawMessage) (listPage, error) {
	var p listPage
	data, ok := members["data"]
	switch {
	case !ok:
		return p, errors.New(`the member "data" is missing`)
	case jsonKind(data) != "an array":
		return p, fmt.Errorf(`"data" is %s, not an array (an empty list is [])`, jsonKind(data))
	}
	if err := json.Unmarshal(data, &p.Data); err != nil {
		return p, fmt.Errorf(`"data": %v`, err)
	}
	more, ok := members["hasMore"]
	switch {
	case !ok:
		return p, errors.New(`the member "hasMore" is missing`)
	case jsonKind(more) != "a boolean":
		return p, fmt.Errorf(`"hasMore" is %s, not a boolean`, jsonKind(more))
	}
	p.HasMore = bytes.Equal(bytes.TrimSpace(more), []byte("true"))
	if next, ok := members["nextCursor"]; ok {
		switch jsonKind(next) {
		case "null":
		case "a string":
			var s string
			if err := json.Unmarshal(next, &s); err != nil {
				return p, fmt.Errorf(`"nextCursor": %v`, err)
			}
			p.NextCursor = &s
		default:
			return p, fmt.Errorf(`"nextCursor" is %s, not a string or null`, jsonKind(next))
		}
	}
	return p, nil
}

// readObject reads a JSON object into its members, raw, refusing a body
// that is not one object, trailing data and a member name given twice.
func readObject(body []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("the body is not JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("the body is %s, not a JSON object", jsonKind(body))
	}
	members := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("the body is not JSON: %v", err)
		}
		name, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("the body is not JSON: %v", err)
		}
		if _, dup := members[name]; dup {
			return nil, fmt.Errorf("the member %q appears twice", name)
		}
		members[name] = raw
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("the body is not JSON: %v", err)
	}
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return nil, errors.New("the body has data after the JSON object")
	}
	return members, nil
}

// jsonKind names the kind of a JSON value for a message.
func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "empty"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// parsed holds what was read of an exchange's body, so that each body is
// read once however many checks look at it.
type parsed struct {
	membersDone bool
	members     map[string]json.RawMessage
	membersErr  error
	pageDone    bool
	page        listPage
	pageErr     error
}

// object reads the body as a JSON object (readObject), once.
func (ex *exchange) object() (map[string]json.RawMessage, error) {
	if !ex.parsed.membersDone {
		ex.parsed.membersDone = true
		if !utf8.Valid(ex.Body) {
			ex.parsed.membersErr = errors.New("the body is not valid UTF-8")
		} else {
			ex.parsed.members, ex.parsed.membersErr = readObject(ex.Body)
		}
	}
	return ex.parsed.members, ex.parsed.membersErr
}

// envelope reads the body as readPage does, once.
func (ex *exchange) envelope() (listPage, error) {
	if !ex.parsed.pageDone {
		ex.parsed.pageDone = true
		m, err := ex.object()
		if err != nil {
			ex.parsed.pageErr = err
		} else {
			ex.parsed.page, ex.parsed.pageErr = pageOf(m)
		}
	}
	return ex.parsed.page, ex.parsed.pageErr
}

// items returns the items of the body's data member when it is an array,
// whatever else is wrong with the envelope.
func (ex *exchange) items() []json.RawMessage {
	if p, err := ex.envelope(); err == nil {
		return p.Data
	}
	m, err := ex.object()
	if err != nil || jsonKind(m["data"]) != "an array" {
		return nil
	}
	var data []json.RawMessage
	_ = json.Unmarshal(m["data"], &data)
	return data
}

// page reads ex as a list page: a 200 answer whose body readPage accepts.
func (ex *exchange) page() (listPage, error) {
	switch {
	case ex.Status == 0:
		return listPage{}, fmt.Errorf("no answer: %v", ex.Err)
	case ex.Status != http.StatusOK:
		return listPage{}, fmt.Errorf("answered %d", ex.Status)
	}
	p, err := ex.envelope()
	if err != nil {
		return p, fmt.Errorf("not a valid list envelope: %w", err)
	}
	return p, nil
}
