package store

import "context"

// SetProbeQuery makes the probe ask q instead of SELECT 1 (a node that answers as a donor or
// a joiner does), and returns a function that restores it. Not for parallel tests.
func SetProbeQuery(q string) (restore func()) {
	old := probeQuery
	probeQuery = q
	return func() { probeQuery = old }
}

// OpenConnsTo is how many network connections to node k (0-based, in database.hosts'
// order) are open.
func (d *DB) OpenConnsTo(k int) int {
	if d.my.nodes == nil || d.my.nodes.live == nil {
		return 0
	}
	return d.my.nodes.live.count(k)
}

// CloseConnsTo closes every network connection to node k (0-based), as the probe does to a
// node it marks down, and returns how many it closed.
func (d *DB) CloseConnsTo(k int) int {
	if d.my.nodes == nil || d.my.nodes.live == nil {
		return 0
	}
	return d.my.nodes.live.closeNode(k)
}

// ExecAll is execAll, the batch's multi-statement round trip.
func (b *Batch) ExecAll(ctx context.Context, q string) ([]int64, error) {
	return b.execAll(ctx, q, nil)
}
