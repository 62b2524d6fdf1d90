package spec

import "encoding/json"

// The types below hold arrays that their schemas require. A nil slice would
// encode as null, so their MarshalJSON methods write [] instead. (Embedding
// one of these types in another struct promotes its MarshalJSON; wrap it in a
// named field instead.)

// MarshalJSON implements [json.Marshaler], writing a nil UsedBy as [].
func (i Instruction) MarshalJSON() ([]byte, error) {
	type plain Instruction
	if i.UsedBy == nil {
		i.UsedBy = []string{}
	}
	return json.Marshal(plain(i))
}

// MarshalJSON implements [json.Marshaler], writing a nil Items as [].
func (l InstructionList) MarshalJSON() ([]byte, error) {
	type plain InstructionList
	if l.Items == nil {
		l.Items = []Instruction{}
	}
	return json.Marshal(plain(l))
}

// MarshalJSON implements [json.Marshaler], writing a nil Data as [].
func (l ReviewTaskList) MarshalJSON() ([]byte, error) {
	type plain ReviewTaskList
	if l.Data == nil {
		l.Data = []ReviewTask{}
	}
	return json.Marshal(plain(l))
}

// MarshalJSON implements [json.Marshaler], writing a nil Data as [].
func (l WebhookList) MarshalJSON() ([]byte, error) {
	type plain WebhookList
	if l.Data == nil {
		l.Data = []Webhook{}
	}
	return json.Marshal(plain(l))
}

// MarshalJSON implements [json.Marshaler], writing a nil Events as [].
func (w Webhook) MarshalJSON() ([]byte, error) {
	type plain Webhook
	if w.Events == nil {
		w.Events = []string{}
	}
	return json.Marshal(plain(w))
}

// marshalMerged encodes the object known and adds the members of extra that
// known does not write itself.
func marshalMerged[V any](known any, extra map[string]V) ([]byte, error) {
	b, err := json.Marshal(known)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return nil, err
	}
	all := make(map[string]any, len(members)+len(extra))
	for k, v := range extra {
		all[k] = v
	}
	for k, v := range members {
		all[k] = v
	}
	return json.Marshal(all)
}

// unmarshalExtra decodes b into known and returns the members other than
// the known names, or nil when there are none.
func unmarshalExtra(b []byte, known any, names ...string) (map[string]json.RawMessage, error) {
	if err := json.Unmarshal(b, known); err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	for _, n := range names {
		delete(all, n)
	}
	if len(all) == 0 {
		return nil, nil
	}
	return all, nil
}
