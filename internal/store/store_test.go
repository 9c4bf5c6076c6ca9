package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"msgx/internal/pipeline"

	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

func TestMigrateTwiceIsANoOp(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		v, err := db.Migrate(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if v < 1 {
			t.Fatalf("schema version %d after migrate", v)
		}
		for _, table := range []string{"CMINMSGS", "CMINMSGS_HST", "PROC_STATE", "MSG_EVENT", "REF_DATA", "REQ_TRACK", "PUMP_JOB", "FLIGHT_STATE", "PUMP_LEASE"} {
			var n int
			if err := db.SQL.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
				t.Errorf("table %s: %v", table, err)
			}
		}
	})
}

func TestLeaseContract(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
		if err := db.AcquireLease(ctx, "pump", "a", 15*time.Second, t0); err != nil {
			t.Fatal(err)
		}
		var held *store.LeaseHeldError
		if err := db.AcquireLease(ctx, "pump", "b", 15*time.Second, t0.Add(5*time.Second)); !errors.As(err, &held) || held.Holder != "a" {
			t.Fatalf("second holder while the lease is live: %v", err)
		}
		if err := db.RenewLease(ctx, "pump", "a", 15*time.Second, t0.Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := db.AcquireLease(ctx, "pump", "b", 15*time.Second, t0.Add(20*time.Second)); !errors.As(err, &held) {
			t.Fatalf("renewal must extend the lease: %v", err)
		}
		// The holder died: once the lease expires another instance takes it, and the old
		// holder's renewal fails so it stops.
		if err := db.AcquireLease(ctx, "pump", "b", 15*time.Second, t0.Add(26*time.Second)); err != nil {
			t.Fatalf("expired lease not taken over: %v", err)
		}
		if err := db.RenewLease(ctx, "pump", "a", 15*time.Second, t0.Add(27*time.Second)); err == nil {
			t.Fatal("the old holder renewed a lease it lost")
		}
		if err := db.ReleaseLease(ctx, "pump", "b"); err != nil {
			t.Fatal(err)
		}
		if h, _, _ := db.LeaseHolder(ctx, "pump"); h != "" {
			t.Fatalf("released lease still held by %q", h)
		}
	})
}

func TestArchiveMovesOnlyFinishedOldMessages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		old := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
		ids, err := db.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>"}, old)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Record(ctx, ids[0], store.Outcome{State: pipeline.Dead, Class: pipeline.Malformed, LastError: "x"}, old); err != nil {
			t.Fatal(err)
		}
		if err := db.Record(ctx, ids[1], store.Outcome{State: pipeline.Failed, Class: pipeline.Infra, Attempts: 1, LastError: "y"}, old); err != nil {
			t.Fatal(err)
		}
		n, err := db.Archive(ctx, ids[2], old.Add(48*time.Hour))
		if err != nil || n != 1 {
			t.Fatalf("archived %d (%v), want only the DEAD one", n, err)
		}
		if _, ok, _ := db.Raw(ctx, ids[0]); ok {
			t.Fatal("archived message still in CMINMSGS")
		}
		var hst string
		if err := db.SQL.QueryRow(`SELECT CMINMSGS_CLOB_MSG FROM CMINMSGS_HST WHERE CMINMSGS_ID = ?`, ids[0]).Scan(&hst); err != nil || hst != "<a/>" {
			t.Fatalf("history row: %q %v", hst, err)
		}
		if m, _ := db.GetMessage(ctx, ids[0]); m == nil || m.State != pipeline.Dead {
			t.Fatalf("the state of an archived message must stay readable: %+v", m)
		}
		for _, id := range ids[1:] {
			if _, ok, _ := db.Raw(ctx, id); !ok {
				t.Fatalf("unfinished message %d was archived", id)
			}
		}
	})
}

func TestTimesKeepMicrosecondsInUTC(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		at := time.Date(2026, 12, 1, 23, 59, 59, 123456000, time.FixedZone("UTC+8", 8*3600))
		ids, err := db.InsertMessages(ctx, []string{"<x/>"}, at)
		if err != nil {
			t.Fatal(err)
		}
		m, err := db.GetMessage(ctx, ids[0])
		if err != nil || m.ReceivedAt == nil || !m.ReceivedAt.Equal(at) || m.ReceivedAt.Location() != time.UTC {
			t.Fatalf("received_at %v, want %v in UTC", m.ReceivedAt, at.UTC())
		}
	})
}

func TestFenceStopsAReplacedPump(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
		ids, err := db.InsertMessages(ctx, []string{"<a/>"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.AcquireLease(ctx, "pump", "a", 15*time.Second, t0); err != nil {
			t.Fatal(err)
		}
		db.SetFence("pump", "a")
		if err := db.Record(ctx, ids[0], store.Outcome{State: pipeline.Failed, Class: pipeline.Infra, Attempts: 1, LastError: "x"}, t0); err != nil {
			t.Fatalf("the holder's write: %v", err)
		}
		// a was paused past its lease; b took over.
		if err := db.AcquireLease(ctx, "pump", "b", 15*time.Second, t0.Add(20*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := db.Record(ctx, ids[0], store.Outcome{State: pipeline.Dead, Class: pipeline.Exhausted, Attempts: 2, LastError: "y"}, t0); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("a replaced pump's Record: %v, want ErrFenced", err)
		}
		_, _, err = db.Succeed(ctx, ids[0], store.Success{TypeTag: "X-Y", Identity: "A|X|Y|1"}, nil, t0)
		if !errors.Is(err, store.ErrFenced) {
			t.Fatalf("a replaced pump's Succeed: %v, want ErrFenced", err)
		}
		if m, _ := db.GetMessage(ctx, ids[0]); m.State != pipeline.Failed || m.Attempts != 1 {
			t.Fatalf("the fenced writes changed the message: %+v", m)
		}
	})
}
