package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// leaseStore is what the lease keeper needs of the database: the PUMP_LEASE row.
type leaseStore interface {
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) error
	TakeOverLease(ctx context.Context, name, holder, dead string, ttl time.Duration, now time.Time) error
	RenewLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) error
	ReleaseLease(ctx context.Context, name, holder string) error
	// Ping checks that the database answers (between renewals, to pause the workers soon).
	Ping(ctx context.Context) error
}

// pumpPhase is where the lease keeper stands.
type pumpPhase int

const (
	phaseStarting pumpPhase = iota // nothing tried yet
	phaseActive                    // this instance holds the lease; the pump and dispatcher run
	phaseStandby                   // another live instance holds the lease; nothing runs here
	phasePaused                    // the database does not answer; nothing runs until it does
)

// leaseKeeper runs the pump and the dispatcher only while this instance holds the pump lease.
//
//   - starting or paused or standby: it tries to take the lease. Taken: it starts the workers
//     (active). Held by a process of this host that is gone: it takes the lease over at once.
//     Held by another live instance: it stands by (or, when standby is impossible, ends Run
//     with exit code 3) and looks again when that lease would expire, at the latest after a
//     renewal period. The database does not answer: paused, retried with capped backoff.
//   - active: it renews the lease every ttl/3 and, in between, checks every second that the
//     database answers. A renewal or a check that fails, whatever the cause, stops the
//     workers at once (they finish the step in hand) and goes back to taking the lease:
//     still ours, or expired and free, it is re-taken and the workers start again; taken by
//     another instance meanwhile, this one stands by.
//
// So the workers never run past a lease this instance is not sure to hold: they are stopped
// at the first failed renewal, at least two renewal periods before the lease can expire, and
// the pump's writes are fenced by the lease besides (store.SetFence).
//
// step does one move and says how long to wait before the next; Run loops over it. Tests
// drive step with a hand-set clock.
type leaseKeeper struct {
	db      leaseStore
	name    string
	holder  string
	ttl     time.Duration
	standby bool // wait for a lease another instance holds, rather than end Run
	clock   pipeline.Clock
	log     *slog.Logger
	// isDead reports whether a lease holder is a process of this host that no longer runs.
	isDead func(holder string) bool
	// start starts the pump and the dispatcher; the function it returns stops them and
	// waits until they have.
	start func() (stop func())
	// metrics shows whether this instance holds the lease (msgx_lease_held); nil: not shown.
	metrics *metrics.Metrics

	stop     func() // non-nil while the workers run
	renewed  time.Time
	failures int // consecutive tries the database did not answer

	mu    sync.Mutex // guards what State reads
	phase pumpPhase
	other string    // standby: who holds the lease
	until time.Time // standby: until when
	err   string    // paused: the last error
}

// retryDelay is the wait after the n-th consecutive try the database did not answer: 0.5 s
// doubling, capped at 5 s, so an outage costs a few log lines a minute, not a hot loop, and
// the return is noticed within seconds.
func retryDelay(n int) time.Duration {
	d := 500 * time.Millisecond
	for i := 1; i < n && d < 5*time.Second; i++ {
		d *= 2
	}
	return min(d, 5*time.Second)
}

func (k *leaseKeeper) renewEvery() time.Duration { return k.ttl / 3 }

// checkEvery is how often an active keeper checks that the database answers, so that the
// pump and the dispatcher pause within about a second of an outage rather than fail their
// steps until the next renewal.
const checkEvery = time.Second

// step does one move of the keeper (see leaseKeeper) and returns how long to wait before the
// next. A non-nil error ends Run: the lease is held by another instance and standby is
// impossible.
func (k *leaseKeeper) step(ctx context.Context) (time.Duration, error) {
	now := k.clock.Now()
	if k.stop != nil {
		cctx, cancel := context.WithTimeout(ctx, k.renewEvery())
		var err error
		renew := now.Sub(k.renewed) >= k.renewEvery()-checkEvery/2
		if renew {
			err = k.db.RenewLease(cctx, k.name, k.holder, k.ttl, now)
		} else if err = k.db.Ping(cctx); err != nil {
			err = store.Unavailable(fmt.Errorf("ping: %w", err))
		}
		cancel()
		if err == nil {
			if renew {
				k.renewed = now
			}
			return min(checkEvery, k.renewed.Add(k.renewEvery()).Sub(now)), nil
		}
		if ctx.Err() != nil {
			return 0, nil
		}
		k.stopWorkers()
		if errors.Is(err, store.ErrUnavailable) {
			k.failures = 1
			k.setPhase(phasePaused, "", time.Time{}, err.Error())
			k.log.Warn("cannot renew the pump lease: the database does not answer; pump and dispatcher paused until it does",
				"err", err.Error(), "renewed_at", k.renewed.Format(time.RFC3339Nano), "retry_in", retryDelay(1).String())
			return retryDelay(1), nil
		}
		k.log.Warn("pump lease lost; pump and dispatcher stopped", "err", err.Error())
		// Look at once who holds it now.
	}
	return k.acquire(ctx, now)
}

// acquire tries to take the lease and starts the workers when it does.
func (k *leaseKeeper) acquire(ctx context.Context, now time.Time) (time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, k.renewEvery())
	defer cancel()
	err := k.db.AcquireLease(cctx, k.name, k.holder, k.ttl, now)
	var held *store.LeaseHeldError
	if errors.As(err, &held) && k.isDead(held.Holder) {
		// The holder was a process of this host that is gone (killed, crashed): its lease
		// cannot be renewed any more, so take it now rather than wait for it to expire.
		terr := k.db.TakeOverLease(cctx, k.name, k.holder, held.Holder, k.ttl, now)
		switch {
		case terr == nil:
			k.log.Warn("took over the pump lease of a dead instance", "dead_holder", held.Holder)
			err = nil
		case errors.Is(terr, store.ErrUnavailable):
			err = terr
		default:
			// Another instance was quicker: look again shortly to see who holds it now.
			k.log.Info("the lease of a dead instance was taken by another first", "dead_holder", held.Holder, "err", terr.Error())
			return retryDelay(1), nil
		}
	}
	switch {
	case err == nil:
		k.renewed, k.failures = now, 0
		k.log.Info("pump lease acquired", "holder", k.holder, "ttl", k.ttl.String())
		k.setPhase(phaseActive, "", time.Time{}, "")
		k.stop = k.start()
		return checkEvery, nil
	case errors.As(err, &held):
		if !k.standby {
			return 0, exitError{code: exitLeaseHeld, msg: "msgx serve: " + held.Error() +
				". Stop it first, or wait for its lease to expire if it died (a SQLite database has one host, so no instance stands by)."}
		}
		k.failures = 0
		if k.current() != phaseStandby || k.otherHolder() != held.Holder {
			k.log.Warn("standing by: another instance holds the pump lease; this one serves the inbox and the API and takes over when that lease expires",
				"holder", held.Holder, "until", held.Until.UTC().Format(time.RFC3339Nano))
		}
		k.setPhase(phaseStandby, held.Holder, held.Until, "")
		// Look again just after that lease would expire, and at least once per renewal
		// period (to notice a holder of this host that died).
		wait := held.Until.Sub(now) + 50*time.Millisecond
		return max(min(wait, k.renewEvery()), 50*time.Millisecond), nil
	case ctx.Err() != nil:
		return 0, nil
	default:
		k.failures++
		wait := retryDelay(k.failures)
		k.setPhase(phasePaused, "", time.Time{}, err.Error())
		k.log.Warn("cannot take the pump lease (the database does not answer, or refused); pump and dispatcher wait, trying again",
			"attempt", k.failures, "retry_in", wait.String(), "err", err.Error())
		return wait, nil
	}
}

func (k *leaseKeeper) stopWorkers() {
	if k.stop != nil {
		k.stop()
		k.stop = nil
	}
}

// shutdown stops the workers and gives the lease up so another instance may take it at once.
func (k *leaseKeeper) shutdown() {
	k.stopWorkers()
	if k.current() == phaseStandby || k.current() == phaseStarting {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.db.ReleaseLease(ctx, k.name, k.holder); err != nil {
		k.log.Warn("could not release the pump lease", "err", err.Error())
		return
	}
	k.log.Info("pump lease released", "holder", k.holder)
}

// run calls step until ctx ends or step fails, waiting first and between steps as step says;
// on the way out it stops the workers and releases the lease.
func (k *leaseKeeper) run(ctx context.Context, first time.Duration) error {
	defer k.shutdown()
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		wait, err := k.step(ctx)
		if err != nil {
			return err
		}
		t.Reset(wait)
	}
}

func (k *leaseKeeper) setPhase(p pumpPhase, other string, until time.Time, err string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.phase, k.other, k.until, k.err = p, other, until, err
	k.metrics.SetLeaseHeld(p == phaseActive)
}

func (k *leaseKeeper) current() pumpPhase {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.phase
}

func (k *leaseKeeper) otherHolder() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.other
}

// State says whether the pump runs in this process and, when it does not, why. It is safe
// to call from any goroutine (the API's status and health).
func (k *leaseKeeper) State() (running bool, note string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch k.phase {
	case phaseActive:
		return true, "running: this instance holds the pump lease"
	case phaseStandby:
		return false, fmt.Sprintf("standby: instance %s holds the pump lease (until %s); this one takes over when it expires",
			k.other, k.until.UTC().Format(time.RFC3339))
	case phasePaused:
		return false, "paused: waiting for the database (" + k.err + "); the pump resumes when it answers"
	}
	return false, "starting: taking the pump lease"
}
