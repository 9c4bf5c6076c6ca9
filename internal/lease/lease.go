// Package lease is the pump lease keeper: an instance runs the pump and the dispatcher only
// while it holds the PUMP_LEASE row (store.PumpLease), renews it, pauses them when the
// database does not answer, stands by while another live instance holds it, and takes over
// when that one's lease expires or its process is gone.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// Store is what the lease keeper needs of the database: the PUMP_LEASE row (store.Lease; the
// msgx database implements it).
type Store interface {
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) error
	TakeOverLease(ctx context.Context, c store.LeaseClaim, dead string, now time.Time) error
	RenewLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) error
	ReleaseLease(ctx context.Context, name, holder string) error
	// Ping checks that the database answers (between renewals, to pause the workers soon).
	Ping(ctx context.Context) error
}

// phase is where the lease keeper stands.
type phase int

const (
	phaseStarting phase = iota // nothing tried yet
	phaseActive                // this instance holds the lease; the pump and dispatcher run
	phaseStandby               // another live instance holds the lease; nothing runs here
	phasePaused                // the database does not answer; nothing runs until it does
)

// Keeper runs the pump and the dispatcher only while this instance holds the pump lease.
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
// Step does one move and says how long to wait before the next; Run loops over it. Tests
// drive Step with a hand-set clock.
type Keeper struct {
	DB      Store
	Name    string // store.PumpLease
	Holder  string // this instance (InstanceName)
	TTL     time.Duration
	Standby bool // wait for a lease another instance holds, rather than end Run
	Clock   pipeline.Clock
	Log     *slog.Logger
	// IsDead reports whether a lease holder is a process of this host that no longer runs
	// (DeadOnThisHost).
	IsDead func(holder string) bool
	// Start starts the pump and the dispatcher; the function it returns stops them and
	// waits until they have.
	Start func() (stop func())
	// Metrics shows whether this instance holds the lease (msgx_lease_held); nil: not shown.
	Metrics *metrics.Metrics

	stop     func() // non-nil while the workers run
	renewed  time.Time
	failures int // consecutive tries the database did not answer

	mu    sync.Mutex // guards what State reads
	phase phase
	other string    // standby: who holds the lease
	until time.Time // standby: until when
	err   string    // paused: the last error
}

// TTL is the pump lease's time to live; the keeper renews it every TTL/3.
const TTL = 15 * time.Second

// RetryDelay is the wait after the n-th consecutive try the database did not answer: 0.5 s
// doubling, capped at 5 s, so an outage costs a few log lines a minute, not a hot loop, and
// the return is noticed within seconds.
func RetryDelay(n int) time.Duration { return pipeline.Backoff(n, 500*time.Millisecond, 5*time.Second) }

func (k *Keeper) renewEvery() time.Duration { return k.TTL / 3 }

// checkEvery is how often an active keeper checks that the database answers, so that the
// pump and the dispatcher pause within about a second of an outage rather than fail their
// steps until the next renewal.
const checkEvery = time.Second

// Step does one move of the keeper (see Keeper) and returns how long to wait before the
// next. A non-nil error ends Run: the lease is held by another instance and standby is
// impossible (StandbyImpossibleError).
func (k *Keeper) Step(ctx context.Context) (time.Duration, error) {
	now := k.Clock.Now()
	if k.stop != nil {
		renew := now.Sub(k.renewed) >= k.renewEvery()-checkEvery/2
		err := k.check(ctx, renew, now)
		if err == nil {
			if renew {
				k.renewed = now
			}
			return min(checkEvery, k.renewed.Add(k.renewEvery()).Sub(now)), nil
		}
		if ctx.Err() != nil {
			return 0, nil
		}
		// Say so before stopping the workers: they finish the step in hand, which on a hung
		// database takes until the connection's read deadline.
		if errors.Is(err, store.ErrUnavailable) {
			k.failures = 1
			k.setPhase(phasePaused, "", time.Time{}, err.Error())
			k.Log.Warn("cannot renew the pump lease: the database does not answer; pump and dispatcher paused until it does",
				"err", err.Error(), "renewed_at", k.renewed.Format(time.RFC3339Nano), "deadline", k.callDeadline().String(),
				"retry_in", RetryDelay(1).String())
			k.stopWorkers()
			return RetryDelay(1), nil
		}
		k.Log.Warn("pump lease lost; pump and dispatcher stopped", "err", err.Error())
		k.stopWorkers()
		// Look at once who holds it now.
	}
	return k.acquire(ctx, now)
}

// callDeadline bounds one renewal or check: a database that accepts the call and answers
// nothing (a hung node) is noticed within a check interval and this deadline, well inside one
// renewal period, so the workers stop long before the lease could expire.
func (k *Keeper) callDeadline() time.Duration { return k.renewEvery() / 2 }

// check renews the lease (renew) or pings the database, under callDeadline.
func (k *Keeper) check(ctx context.Context, renew bool, now time.Time) error {
	cctx, cancel := context.WithTimeout(ctx, k.callDeadline())
	defer cancel()
	if renew {
		err := k.DB.RenewLease(cctx, k.Name, k.Holder, k.TTL, now)
		if err != nil && cctx.Err() != nil && ctx.Err() == nil {
			err = store.Unavailable(fmt.Errorf("renewal unanswered after %s: %w", k.callDeadline(), err))
		}
		return err
	}
	if err := k.DB.Ping(cctx); err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			return store.Unavailable(fmt.Errorf("ping unanswered after %s: %w", k.callDeadline(), err))
		}
		return store.Unavailable(fmt.Errorf("ping: %w", err))
	}
	return nil
}

// acquire tries to take the lease and starts the workers when it does.
func (k *Keeper) acquire(ctx context.Context, now time.Time) (time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, k.renewEvery())
	defer cancel()
	err := k.DB.AcquireLease(cctx, k.Name, k.Holder, k.TTL, now)
	var held *store.LeaseHeldError
	if errors.As(err, &held) && k.IsDead(held.Holder) {
		// The holder was a process of this host that is gone (killed, crashed): its lease
		// cannot be renewed any more, so take it now rather than wait for it to expire.
		terr := k.DB.TakeOverLease(cctx, store.LeaseClaim{Name: k.Name, Holder: k.Holder, TTL: k.TTL}, held.Holder, now)
		switch {
		case terr == nil:
			k.Log.Warn("took over the pump lease of a dead instance", "dead_holder", held.Holder)
			err = nil
		case errors.Is(terr, store.ErrUnavailable):
			err = terr
		default:
			// Another instance was quicker: look again shortly to see who holds it now.
			k.Log.Info("the lease of a dead instance was taken by another first", "dead_holder", held.Holder, "err", terr.Error())
			return RetryDelay(1), nil
		}
	}
	switch {
	case err == nil:
		k.renewed, k.failures = now, 0
		k.Log.Info("pump lease acquired", "holder", k.Holder, "ttl", k.TTL.String())
		k.setPhase(phaseActive, "", time.Time{}, "")
		k.stop = k.Start()
		return checkEvery, nil
	case errors.As(err, &held):
		if !k.Standby {
			return 0, &StandbyImpossibleError{Held: held}
		}
		k.failures = 0
		if k.current() != phaseStandby || k.otherHolder() != held.Holder {
			k.Log.Warn("standing by: another instance holds the pump lease; this one serves the inbox and the API and takes over when that lease expires",
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
		wait := RetryDelay(k.failures)
		k.setPhase(phasePaused, "", time.Time{}, err.Error())
		k.Log.Warn("cannot take the pump lease (the database does not answer, or refused); pump and dispatcher wait, trying again",
			"attempt", k.failures, "retry_in", wait.String(), "err", err.Error())
		return wait, nil
	}
}

func (k *Keeper) stopWorkers() {
	if k.stop != nil {
		k.stop()
		k.stop = nil
	}
}

// shutdown stops the workers and gives the lease up so another instance may take it at once.
func (k *Keeper) shutdown() {
	k.stopWorkers()
	if k.current() == phaseStandby || k.current() == phaseStarting {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.DB.ReleaseLease(ctx, k.Name, k.Holder); err != nil {
		k.Log.Warn("could not release the pump lease", "err", err.Error())
		return
	}
	k.Log.Info("pump lease released", "holder", k.Holder)
}

// Run calls Step until ctx ends or Step fails, waiting first and between steps as Step says;
// on the way out it stops the workers and releases the lease.
func (k *Keeper) Run(ctx context.Context, first time.Duration) error {
	defer k.shutdown()
	wait := first
	for {
		// On the keeper's clock: a test that moves the clock drives the renewals.
		timer, stop := pipeline.Timer(k.Clock, wait)
		select {
		case <-ctx.Done():
			stop()
			return nil
		case <-timer:
		}
		var err error
		if wait, err = k.Step(ctx); err != nil {
			return err
		}
	}
}

func (k *Keeper) setPhase(p phase, other string, until time.Time, err string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.phase, k.other, k.until, k.err = p, other, until, err
	k.Metrics.SetLeaseHeld(p == phaseActive)
}

func (k *Keeper) current() phase {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.phase
}

func (k *Keeper) otherHolder() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.other
}

// State says whether the pump runs in this process and, when it does not, why. It is safe
// to call from any goroutine (the API's status and health).
func (k *Keeper) State() (running bool, note string) {
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

// StandbyImpossibleError ends Run: another live instance holds the lease and this one may not
// stand by (a SQLite database has one host).
type StandbyImpossibleError struct{ Held *store.LeaseHeldError }

func (e *StandbyImpossibleError) Error() string {
	return e.Held.Error() + ". Stop it first, or wait for its lease to expire if it died (a SQLite database has one host, so no instance stands by)."
}

func (e *StandbyImpossibleError) Unwrap() error { return e.Held }

// DeadOnThisHost reports whether a lease holder name (see InstanceName) is a process of this
// host that no longer runs.
func DeadOnThisHost(holder string) bool {
	host, _ := os.Hostname()
	parts := strings.Split(holder, "/")
	if len(parts) != 3 || parts[0] != host || !strings.HasPrefix(parts[1], "pid-") {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(parts[1], "pid-"))
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// InstanceName is this process's lease holder name: host/pid-N/random.
func InstanceName() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s/pid-%d/%s", host, os.Getpid(), hex.EncodeToString(b))
}
