package jobs_test

import (
	"context"
	"testing"
	"time"

	"msgx/internal/jobs"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// Run waits for the next entry's time on the schedule's clock: at 02:59:30 with ARCHIVE at
// 03:00 nothing is enqueued while the clock stands short of 03:00, and the job is enqueued
// (and the pump woken) once the clock is moved there, without waiting in real time.
func TestTheScheduleWaitRunsOnItsClock(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		clock := testkit.NewClock(time.Date(2026, 11, 23, 2, 59, 30, 0, shanghai))
		woken := make(chan struct{}, 1)
		s := &jobs.Scheduler{DB: db.JobQueue, Clock: clock, Location: shanghai,
			Entries: []jobs.Entry{{Kind: jobs.Archive, Hour: 3}},
			Wake:    func() { woken <- struct{}{} }}
		done := make(chan struct{})
		go func() { defer close(done); s.Run(ctx) }()
		defer func() { cancel(); <-done }()
		queued := func() int {
			js, err := db.JobQueue.ListJobs(context.Background(), 10)
			if err != nil {
				t.Fatal(err)
			}
			return len(js)
		}
		testkit.Eventually(t, 10*time.Second, "Run waiting on the clock", func() bool { return clock.Waiting() == 1 })
		clock.Add(29 * time.Second)
		if n := queued(); n != 0 {
			t.Fatalf("%d jobs queued at 02:59:59, before the wait ended", n)
		}
		clock.Add(time.Second)
		select {
		case <-woken:
		case <-time.After(10 * time.Second):
			t.Fatal("no job enqueued once the clock reached 03:00")
		}
		js, err := db.JobQueue.ListJobs(context.Background(), 10)
		if err != nil || len(js) != 1 || js[0].ScheduleKey != "ARCHIVE/2026-11-23" {
			t.Fatalf("queued %+v, %v; want ARCHIVE/2026-11-23", js, err)
		}
	})
}
