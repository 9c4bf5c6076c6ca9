package simulate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"msgx/internal/pipeline"
)

// PlayOptions say how to send a stream.
type PlayOptions struct {
	// Speed is how many times faster than real time the stream is sent: the gap between two
	// messages' simulated times, divided by Speed, is waited before the later one. 0 sends
	// as fast as Send returns.
	Speed float64
	// Send delivers message i (posts it, writes it) and returns the id the server gave it (0
	// when there is none). An error counts the message as not sent and play goes on.
	Send func(ctx context.Context, i int, m Message) (int64, error)
	// Clock and Sleep pace the stream (the system clock and a context-aware sleep when nil).
	Clock pipeline.Clock
	Sleep func(ctx context.Context, d time.Duration) error
	// GiveUpAfter stops the play after that many messages in a row were refused (0: never),
	// so a wrong address does not try every message of the day.
	GiveUpAfter int
	// Progress, when set, is called after each message with how many have been handled.
	Progress func(done int, m Message, err error)
}

// ErrGaveUp is Play's error when PlayOptions.GiveUpAfter messages in a row were refused.
var ErrGaveUp = errors.New("gave up")

// Result is what a play did.
type Result struct {
	Sent    int     // messages Send accepted
	Failed  int     // messages Send refused
	Done    []bool  // per message: accepted
	IDs     []int64 // per message: the id Send returned
	FirstID int64   // the smallest and largest id returned (0 when none)
	LastID  int64
	Elapsed time.Duration
	Errors  []string // the first few errors, for the summary
}

// Play sends s's messages in order, paced by Speed. It stops early, returning ctx's error,
// when ctx ends; Result then says how far it got.
func Play(ctx context.Context, s *Stream, opt PlayOptions) (Result, error) {
	clock := opt.Clock
	if clock == nil {
		clock = pipeline.SystemClock{}
	}
	sleep := opt.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	res := Result{Done: make([]bool, len(s.Messages)), IDs: make([]int64, len(s.Messages))}
	start := clock.Now()
	defer func() { res.Elapsed = clock.Now().Sub(start) }()
	if len(s.Messages) == 0 {
		return res, nil
	}
	t0 := s.Messages[0].At
	refused := 0
	for i, m := range s.Messages {
		if err := ctx.Err(); err != nil {
			res.Elapsed = clock.Now().Sub(start)
			return res, err
		}
		if opt.Speed > 0 {
			due := start.Add(time.Duration(float64(m.At.Sub(t0)) / opt.Speed))
			if wait := due.Sub(clock.Now()); wait > 0 {
				if err := sleep(ctx, wait); err != nil {
					res.Elapsed = clock.Now().Sub(start)
					return res, err
				}
			}
		}
		id, err := opt.Send(ctx, i, m)
		if err != nil {
			refused++
			res.Failed++
			if len(res.Errors) < 5 {
				res.Errors = append(res.Errors, err.Error())
			}
		} else {
			refused = 0
			res.Sent++
			res.Done[i], res.IDs[i] = true, id
			if id != 0 && (res.FirstID == 0 || id < res.FirstID) {
				res.FirstID = id
			}
			if id > res.LastID {
				res.LastID = id
			}
		}
		if opt.Progress != nil {
			opt.Progress(i+1, m, err)
		}
		if opt.GiveUpAfter > 0 && refused >= opt.GiveUpAfter {
			res.Elapsed = clock.Now().Sub(start)
			return res, fmt.Errorf("%w: %d messages in a row refused (last: %v)", ErrGaveUp, refused, err)
		}
	}
	res.Elapsed = clock.Now().Sub(start)
	return res, nil
}

// Accepted returns the stream of the messages res says were sent.
func (s *Stream) Accepted(res Result) *Stream {
	out := &Stream{Flights: s.Flights, SeqBase: s.SeqBase}
	for i, m := range s.Messages {
		if i < len(res.Done) && res.Done[i] {
			out.Messages = append(out.Messages, m)
		}
	}
	return out
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
