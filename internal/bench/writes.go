package bench

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
)

// The writes of the backlog, counted: from the start of the backlog's accept phase until the
// outbox drained after it was processed (the inbox's, the pump's and the dispatcher's writes,
// and the lease keeper's beside them), the store counts every INSERT, UPDATE and DELETE the
// bench database runs, per statement, with the rows the database reports for it, and the
// b-tree writes that costs from the schema's indexes (store.CountWrites: an INSERT or DELETE
// writes every index of its table, an UPDATE the ones holding a column it sets). The figures
// are per message of the backlog.

// TableWritesPerMsg is one table's writes per message of the backlog. The JSON keys are
// `msgx bench --json`'s.
type TableWritesPerMsg struct {
	Rows     float64 `json:"rows"`  // inserted + updated + deleted
	BTree    float64 `json:"btree"` // b-tree writes: each row × (1 + the indexes it touched)
	Inserted float64 `json:"inserted"`
	Updated  float64 `json:"updated"`
	Deleted  float64 `json:"deleted"`
}

// countWrites starts counting the bench database's writes.
func (b *bench) countWrites(ctx context.Context, _ *Result) error {
	w, err := b.o.DB.CountWrites(ctx)
	if err != nil {
		return fmt.Errorf("count the writes: %w", err)
	}
	b.writes = w
	return nil
}

// writesCounted stops counting and sets the writes per message of the backlog (r.Messages).
func (b *bench) writesCounted(_ context.Context, r *Result) error {
	b.o.DB.StopCountingWrites()
	if b.writes == nil || r.Messages <= 0 {
		return nil
	}
	n := float64(r.Messages)
	r.WritesPerMsg = map[string]TableWritesPerMsg{}
	r.RowsPerMsg, r.BTreePerMsg = 0, 0
	for table, c := range b.writes.Counts() {
		if c.Rows() == 0 {
			continue
		}
		r.WritesPerMsg[table] = TableWritesPerMsg{Rows: float64(c.Rows()) / n, BTree: float64(c.BTree) / n,
			Inserted: float64(c.Inserted) / n, Updated: float64(c.Updated) / n, Deleted: float64(c.Deleted) / n}
		r.RowsPerMsg += float64(c.Rows()) / n
		r.BTreePerMsg += float64(c.BTree) / n
	}
	b.writes = nil
	return nil
}

// writeTables lists the tables of w, the most b-tree writes first.
func writeTables(w map[string]TableWritesPerMsg) []string {
	return slices.SortedFunc(maps.Keys(w), func(a, b string) int {
		return cmp.Or(cmp.Compare(w[b].BTree, w[a].BTree), cmp.Compare(a, b))
	})
}

// writeWrites prints the writes per message for a person, a table a line.
func writeWrites(p func(string, ...any), r Result) {
	if len(r.WritesPerMsg) == 0 {
		return
	}
	p("  writes per message of the backlog\trows %.2f  b-tree %.2f\trows_per_msg, btree_per_msg\taccepted, processed and delivered, counted per statement", r.RowsPerMsg, r.BTreePerMsg)
	for _, t := range writeTables(r.WritesPerMsg) {
		w := r.WritesPerMsg[t]
		p("    %s\trows %.2f  b-tree %.2f\twrites_per_msg.%s\tinserted %.2f, updated %.2f, deleted %.2f", t, w.Rows, w.BTree, t, w.Inserted, w.Updated, w.Deleted)
	}
}
