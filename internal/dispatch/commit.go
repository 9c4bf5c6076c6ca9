package dispatch

import (
	"context"
	"sync"
	"time"

	"msgx/internal/store"
)

// DefaultCommitLinger is Options.CommitLinger's default.
const DefaultCommitLinger = 5 * time.Millisecond

// committer shares one transaction among the outcomes (SENT marks, a failure's record) of the
// targets' steps that finish sending at about the same time: a message's events go to several
// targets, the pump's commit wakes them all at once, and one durable commit for the round
// costs one fsync where a commit per target cost one each (on SQLite they also queue on each
// other and on the pump and the inbox for the single write lock).
//
// It is a group commit without a goroutine of its own. A step calls begin before it sends
// and commit with its writes after; the first commit of a round leads: it waits while other
// steps are still sending (at most the linger), then runs every write queued so far in one
// transaction, in the order they came. Commits that arrive meanwhile queue for the next
// group, which the first of them leads. Each step still waits for its own commit before its
// next read, so a target's events are marked in order, and its writes keep their fences.
// When the shared transaction fails, each write of the group runs again in a transaction
// of its own, so one target's write that the database refuses never fails another's.
type committer struct {
	db     store.Events
	linger time.Duration
	alone  bool // every step commits its own transaction (tests compare the two)

	mu      sync.Mutex
	sending int           // steps between begin and commit
	queue   []*commitReq  // writes waiting for the next group
	leading bool          // a step leads a group now (lingering or committing)
	changed chan struct{} // buffered 1: sending or queue changed (the leader lingers on it)
}

type commitReq struct {
	fn   func(store.EventTx) error
	done chan error    // buffered 1: the outcome of fn's commit
	lead chan struct{} // buffered 1: the submitter is to lead the next group
}

func newCommitter(db store.Events, linger time.Duration) *committer {
	return &committer{db: db, linger: linger, changed: make(chan struct{}, 1)}
}

// begin says a step is about to send and will call commit (or end) when done.
func (c *committer) begin() {
	c.mu.Lock()
	c.sending++
	c.mu.Unlock()
}

// end says a step that called begin will not commit (it failed before its writes).
func (c *committer) end() {
	c.mu.Lock()
	c.sending--
	c.mu.Unlock()
	c.poke()
}

func (c *committer) poke() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// commit runs fn in a transaction shared with the other steps' writes of the same round and
// returns once it is committed (or failed). The caller must have called begin.
func (c *committer) commit(ctx context.Context, fn func(store.EventTx) error) error {
	if c.alone {
		c.end()
		wctx, cancel := writeContext(ctx)
		defer cancel()
		return c.db.EventTx(wctx, fn)
	}
	req := &commitReq{fn: fn, done: make(chan error, 1), lead: make(chan struct{}, 1)}
	c.mu.Lock()
	c.sending--
	c.queue = append(c.queue, req)
	if c.leading {
		c.mu.Unlock()
		c.poke()
		select {
		case err := <-req.done:
			return err
		case <-req.lead:
		}
		c.mu.Lock()
	}
	c.leading = true
	c.lingerLocked()
	group := c.queue
	c.queue = nil
	c.mu.Unlock()

	c.run(ctx, group)

	c.mu.Lock()
	if len(c.queue) > 0 {
		c.queue[0].lead <- struct{}{} // the leading stays taken: handed to the next group's first
	} else {
		c.leading = false
	}
	c.mu.Unlock()
	return <-req.done
}

// lingerLocked waits, with c.mu held on entry and exit, while other steps are still sending,
// at most the linger.
func (c *committer) lingerLocked() {
	if c.sending <= 0 || c.linger <= 0 {
		return
	}
	t := time.NewTimer(c.linger)
	defer t.Stop()
	for c.sending > 0 {
		c.mu.Unlock()
		select {
		case <-c.changed:
			c.mu.Lock()
		case <-t.C:
			c.mu.Lock()
			return
		}
	}
}

// run commits group's writes in one transaction, or each alone when that one fails.
func (c *committer) run(ctx context.Context, group []*commitReq) {
	wctx, cancel := writeContext(ctx)
	defer cancel()
	err := c.db.EventTx(wctx, func(tx store.EventTx) error {
		for _, r := range group {
			if err := r.fn(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || len(group) == 1 {
		for _, r := range group {
			r.done <- err
		}
		return
	}
	for _, r := range group {
		r.done <- c.db.EventTx(wctx, r.fn)
	}
}
