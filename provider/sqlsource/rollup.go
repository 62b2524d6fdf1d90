package sqlsource

import (
	"cmp"
	"context"
	"slices"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/provider"
)

// cell is the key of a row of usage_rollups.
type cell struct {
	tenant                                 string
	width, bucket                          int64
	model, department, assistantID, userID string
	conversationID                         string
}

// compare orders cells as the primary key of usage_rollups, strings byte by
// byte.
func (c cell) compare(o cell) int {
	return cmp.Or(
		cmp.Compare(c.tenant, o.tenant), cmp.Compare(c.width, o.width), cmp.Compare(c.bucket, o.bucket),
		cmp.Compare(c.model, o.model), cmp.Compare(c.department, o.department),
		cmp.Compare(c.assistantID, o.assistantID), cmp.Compare(c.userID, o.userID),
		cmp.Compare(c.conversationID, o.conversationID),
	)
}

type sums struct {
	requests, inputTokens, outputTokens int64
	cost                                float64
}

// rollup accumulates requests per cell, to be added to usage_rollups.
type rollup map[cell]*sums

// add counts u in its hour cell and its day cell.
func (r rollup) add(tenant string, u *provider.UsageRecord) {
	at := ms(u.At)
	for _, w := range [2]int64{hourMS, dayMS} {
		k := cell{tenant, w, sqldb.FloorTo(at, w), u.Model, u.Department, u.AssistantID, u.UserID, u.ConversationID}
		s := r[k]
		if s == nil {
			s = &sums{}
			r[k] = s
		}
		s.requests++
		s.inputTokens += u.InputTokens
		s.outputTokens += u.OutputTokens
		s.cost += u.Cost
	}
}

// take returns the rows of usage_rollups that add every cell, in key order
// (so that a large batch writes the table's B-tree front to back), and
// empties r.
func (r rollup) take() [][]any {
	keys := make([]cell, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cell.compare)
	rows := make([][]any, len(keys))
	for i, k := range keys {
		s := r[k]
		rows[i] = []any{k.tenant, k.width, k.bucket, k.model, k.department, k.assistantID,
			k.userID, k.conversationID, s.requests, s.inputTokens, s.outputTokens, s.cost}
	}
	clear(r)
	return rows
}

// flush adds every cell to usage_rollups, up to rows cells a statement,
// and empties r.
func (r rollup) flush(ctx context.Context, cn conn, rows int) error {
	for chunk := range slices.Chunk(r.take(), rollupsBulk.perStatement(rows)) {
		if err := cn.execBulk(ctx, rollupsBulk, chunk); err != nil {
			return dbError(ctx, "record usage", err)
		}
	}
	return nil
}
