package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// The riders of SQLite (riders.go): short writes done in the commit of the transaction that
// holds the write lock. Each rider here adds to the SENT total of a target of its own
// (MSG_EVENT_SENT), so what committed is one row's read.

// count returns a rider that adds n to target's total, counting its runs in runs.
func count(target string, n int, runs *atomic.Int32) func(*sql.Tx) error {
	return func(tx *sql.Tx) error {
		runs.Add(1)
		_, err := tx.Exec(`INSERT INTO MSG_EVENT_SENT (TARGET, SENT) VALUES (?, ?)
ON CONFLICT (TARGET) DO UPDATE SET SENT = MSG_EVENT_SENT.SENT + excluded.SENT`, target, n)
		return err
	}
}

// total reads target's total from a connection of its own (what is committed).
func total(t *testing.T, db *store.DB, target string) int {
	t.Helper()
	var n int
	err := db.SQL.QueryRow(`SELECT SENT FROM MSG_EVENT_SENT WHERE TARGET = ?`, target).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// rideAsync starts fn's ride and returns the channel of its outcome once n riders are queued.
func rideAsync(t *testing.T, db *store.DB, n int, fn func(*sql.Tx) error) <-chan error {
	t.Helper()
	out := make(chan error, 1)
	go func() { out <- db.Ride(context.Background(), fn) }()
	deadline := time.Now().Add(5 * time.Second)
	for db.RidersQueued() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d riders queued, want %d", db.RidersQueued(), n)
		}
		time.Sleep(time.Millisecond)
	}
	return out
}

// hostBatch opens the pump's batch with a write of its own (target "host").
func hostBatch(t *testing.T, db *store.DB) *store.Batch {
	t.Helper()
	b, err := db.Processor.BeginBatch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	if err := count("host", 1, &runs)(b.Tx()); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRiderRidesTheBatchCommit(t *testing.T) {
	db := storetest.SQLite(t)
	b := hostBatch(t, db)
	var runs atomic.Int32
	done := rideAsync(t, db, 1, count("a", 1, &runs))
	select {
	case err := <-done:
		t.Fatalf("the rider returned (%v) while the batch holding the write lock was open", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := b.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Carried by the batch's commit, the rider's write is durable when Commit returns (alone,
	// it would begin its own transaction only then).
	if got := total(t, db, "a"); got != 1 {
		t.Errorf("rider's total right after the batch's commit = %d, want 1", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if total(t, db, "host") != 1 || runs.Load() != 1 {
		t.Errorf("host total %d, rider runs %d; want 1 and 1", total(t, db, "host"), runs.Load())
	}
}

func TestRiderThatFailsRunsAloneAndGetsItsOwnError(t *testing.T) {
	db := storetest.SQLite(t)
	b := hostBatch(t, db)
	var aRuns, bRuns, cRuns atomic.Int32
	refused := errors.New("refused")
	a := rideAsync(t, db, 1, count("a", 1, &aRuns))
	bad := rideAsync(t, db, 2, func(tx *sql.Tx) error {
		if err := count("b", 1, &bRuns)(tx); err != nil {
			return err
		}
		return refused // after a write, which must not stay
	})
	c := rideAsync(t, db, 3, count("c", 1, &cRuns))
	if err := b.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-bad; !errors.Is(err, refused) {
		t.Errorf("failing rider: %v, want %v", err, refused)
	}
	for _, ch := range []<-chan error{a, c} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	got := fmt.Sprint(total(t, db, "host"), total(t, db, "a"), total(t, db, "b"), total(t, db, "c"),
		aRuns.Load(), bRuns.Load(), cRuns.Load())
	if want := "1 1 0 1 1 2 1"; got != want { // b ran in the batch, then alone
		t.Errorf("totals host a b c, runs a b c = %s, want %s", got, want)
	}
}

func TestRidersOfABrokenHostRunAlone(t *testing.T) {
	db := storetest.SQLite(t)
	b := hostBatch(t, db)
	var aRuns, bRuns atomic.Int32
	a := rideAsync(t, db, 1, count("a", 1, &aRuns))
	// The second rider ends the transaction under the host (as SQLite does on an I/O error or
	// an interrupt) the first time it runs: nothing of the host's transaction is committed.
	breaker := rideAsync(t, db, 2, func(tx *sql.Tx) error {
		if bRuns.Add(1) == 1 {
			_, err := tx.Exec(`ROLLBACK`)
			return err
		}
		return count("b", 1, new(atomic.Int32))(tx)
	})
	if err := b.Commit(context.Background()); err == nil {
		t.Fatal("the batch committed after its transaction was rolled back")
	}
	for _, ch := range []<-chan error{a, breaker} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	got := fmt.Sprint(total(t, db, "host"), total(t, db, "a"), total(t, db, "b"), aRuns.Load(), bRuns.Load())
	if want := "0 1 1 2 2"; got != want {
		t.Errorf("totals host a b, runs a b = %s, want %s", got, want)
	}
}

func TestRiderWithNoHostLeads(t *testing.T) {
	db := storetest.SQLite(t)
	var runs atomic.Int32
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.Ride(ctx, count("a", 1, &runs)); err != nil {
		t.Fatal(err)
	}
	if total(t, db, "a") != 1 || runs.Load() != 1 || db.RidersQueued() != 0 {
		t.Errorf("total %d, runs %d, queued %d; want 1, 1, 0", total(t, db, "a"), runs.Load(), db.RidersQueued())
	}
}

// TestRidersUnderLoad: many riders and a host committing batches in a loop; every rider's
// write is committed exactly once, and each rider returns only once it is.
func TestRidersUnderLoad(t *testing.T) {
	db := storetest.SQLite(t)
	const riders, rides = 16, 25
	stop := make(chan struct{})
	var hosts sync.WaitGroup
	hosts.Add(1)
	go func() {
		defer hosts.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := db.Processor.BeginBatch(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			if err := count("host", 1, new(atomic.Int32))(b.Tx()); err != nil {
				t.Error(err)
			}
			if err := b.Commit(context.Background()); err != nil {
				t.Error(err)
			}
		}
	}()
	var wg sync.WaitGroup
	var runs atomic.Int32
	for i := range riders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			target := fmt.Sprintf("r%d", i)
			for j := range rides {
				if err := db.Ride(context.Background(), count(target, 1, &runs)); err != nil {
					t.Error(err)
					return
				}
				if got := total(t, db, target); got != j+1 {
					t.Errorf("%s after ride %d: total %d", target, j+1, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	hosts.Wait()
	if runs.Load() != riders*rides {
		t.Errorf("%d runs of %d rides", runs.Load(), riders*rides)
	}
}
