package dispatch

import (
	"context"
	"sync"
	"time"

	"msgx/internal/store"
)

// committer shares one transaction among the outcomes (SENT marks, a failure's record) of the
// targets' steps that finish sending at about the same time: a message's events go to several
// targets, the pump's commit wakes them all at once, and one durable commit for the round
// costs one fsync where a commit per target cost one each (on SQLite they also queue on each
// other and on the pump and the inbox for the single write lock).
//
// It is a group commit without a goroutine of its own. A step calls begin when it starts and
// commit with its writes once it has sent. The first commit that finds no group forming leads
// one: it may wait while other steps are still sending (Options.CommitLinger, none by
// default), then begins the transaction, and takes into the group every write queued by the
// time the transaction has begun. On SQLite the transaction rides the commit of whichever
// transaction holds the write lock (the pump's batch, the inbox's insert: store's riders), and
// the group is taken when that one carries it, so the writes that come while the leader waits
// ride along: the wait the database imposes anyway is the group's window. A write that comes after the
// group was taken leads the next group at once (its transaction queues for the lock right
// behind). Each step still waits for its own commit before its next read, so a target's
// events are marked in order, and its writes keep their fences. When the shared transaction
// fails, each write of the group runs again in a transaction of its own, so one target's write
// that the database refuses never fails another's.
type committer struct {
	db     store.Events
	linger time.Duration
	alone  bool // every step commits its own transaction (tests compare the two)

	mu      sync.Mutex
	sending int           // steps between begin and commit
	queue   []*commitReq  // writes of the group forming
	forming bool          // a leader is forming a group (its transaction has not yet taken it)
	changed chan struct{} // buffered 1: sending or queue changed (a lingering leader waits on it)
}

type commitReq struct {
	fn   func(store.EventTx) error
	done chan error // buffered 1: the outcome of fn's commit
}

func newCommitter(db store.Events, linger time.Duration) *committer {
	return &committer{db: db, linger: linger, changed: make(chan struct{}, 1)}
}

// begin says a step has started and will call commit (or end) when done.
func (c *committer) begin() {
	c.mu.Lock()
	c.sending++
	c.mu.Unlock()
}

// end says a step that called begin will not commit (it had nothing to send, or failed
// before its writes).
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
	req := &commitReq{fn: fn, done: make(chan error, 1)}
	c.mu.Lock()
	c.sending--
	c.queue = append(c.queue, req)
	if c.forming {
		c.mu.Unlock()
		c.poke()
		return <-req.done
	}
	c.forming = true
	c.lingerLocked()
	c.mu.Unlock()
	c.run(ctx)
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

// take returns the group formed so far and lets the next write lead a new one.
func (c *committer) take() []*commitReq {
	c.mu.Lock()
	defer c.mu.Unlock()
	group := c.queue
	c.queue, c.forming = nil, false
	return group
}

// run begins a transaction, takes the group queued by then, and commits its writes, or each
// alone when the shared transaction fails. Every write of the group gets its outcome.
func (c *committer) run(ctx context.Context) {
	wctx, cancel := writeContext(ctx)
	defer cancel()
	var group []*commitReq
	err := c.db.EventTx(wctx, func(tx store.EventTx) error {
		if group == nil {
			group = c.take()
		}
		for _, r := range group {
			if err := r.fn(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if group == nil {
		// The transaction did not begin: the group is whatever was queued.
		group = c.take()
	}
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
