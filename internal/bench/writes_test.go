package bench

import (
	"strings"
	"testing"
)

// TestWriteTableWrites: the text report gives the writes per message, the table with the most
// b-tree writes first, and names the delivery targets.
func TestWriteTableWrites(t *testing.T) {
	t.Parallel()
	r := Result{Workload: WorkloadClassic, DeliveryTargets: 8, CopyTargets: 4, RowsPerMsg: 10, BTreePerMsg: 33,
		WritesPerMsg: map[string]TableWritesPerMsg{
			"CMINMSGS":  {Rows: 2, BTree: 4, Inserted: 1, Updated: 1},
			"MSG_EVENT": {Rows: 7.93, BTree: 31.72, Inserted: 7.93},
		}}
	var b strings.Builder
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	ev, in := strings.Index(out, "writes_per_msg.MSG_EVENT"), strings.Index(out, "writes_per_msg.CMINMSGS")
	if ev < 0 || in < ev || !strings.Contains(out, "rows 10.00  b-tree 33.00") || !strings.Contains(out, "8 delivery targets (4 copies)") {
		t.Fatalf("the report:\n%s", out)
	}
	t.Log(out)
}
