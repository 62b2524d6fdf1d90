package tools

import (
	"time"
)

// builder collects a Batch.
type builder struct {
	b          Batch
	assistants map[[2]string]int // (name, version) -> index in b.Assistants
	scratch    attrs             // the merged attributes of the record being mapped
}

func (bd *builder) skip(n *int, r Reason) {
	*n++
	if bd.b.Unmapped.Reasons == nil {
		bd.b.Unmapped.Reasons = map[Reason]int{}
	}
	bd.b.Unmapped.Reasons[r]++
}

func (bd *builder) skipLog(r Reason)   { bd.skip(&bd.b.Unmapped.LogRecords, r) }
func (bd *builder) skipPoint(r Reason) { bd.skip(&bd.b.Unmapped.DataPoints, r) }
func (bd *builder) skipSpan(r Reason)  { bd.skip(&bd.b.Unmapped.Spans, r) }

// seen records the tool of id as seen at t.
func (bd *builder) seen(id ident, t time.Time) {
	if id.tool == "" {
		return
	}
	k := [2]string{id.tool, id.version}
	if i, ok := bd.assistants[k]; ok {
		if t.After(bd.b.Assistants[i].LastSeen) {
			bd.b.Assistants[i].LastSeen = t
		}
		return
	}
	if bd.assistants == nil {
		bd.assistants = map[[2]string]int{}
	}
	bd.assistants[k] = len(bd.b.Assistants)
	bd.b.Assistants = append(bd.b.Assistants, Assistant{ID: id.tool, Name: id.tool, Version: id.version, LastSeen: t})
}
