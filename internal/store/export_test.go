package store

import (
	"context"
	"database/sql"
)

// Ride is ride, for the tests of package store_test.
func (d *DB) Ride(ctx context.Context, fn func(*sql.Tx) error) error {
	return d.Processor.ride(ctx, "test", fn)
}

// RidersQueued is how many writes wait to ride.
func (d *DB) RidersQueued() int {
	d.Processor.riders.mu.Lock()
	defer d.Processor.riders.mu.Unlock()
	return len(d.Processor.riders.queue)
}
