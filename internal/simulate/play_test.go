package simulate

import (
	"context"
	"errors"
	"msgx/internal/testkit"
	"testing"
	"time"
)

// At speed X the stream takes its simulated span divided by X, each message sent no earlier
// than its simulated offset divided by X; at speed 0 it never waits.
func TestPlayPacesBySpeed(t *testing.T) {
	s := generate(t, Options{Flights: 20, Seed: 1})
	span := s.Messages[len(s.Messages)-1].At.Sub(s.Messages[0].At)
	for _, speed := range []float64{0, 60, 600} {
		clock := testkit.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) // it moves only when the play sleeps
		start := clock.Now()
		var id int64
		res, err := Play(context.Background(), s, PlayOptions{Speed: speed, Clock: clock, Sleep: clock.Sleep,
			Send: func(_ context.Context, i int, m Message) (int64, error) {
				if speed > 0 {
					if due := start.Add(time.Duration(float64(m.At.Sub(s.Messages[0].At)) / speed)); clock.Now().Before(due) {
						t.Fatalf("speed %v: message %d sent at %s, due %s", speed, i, clock.Now(), due)
					}
				}
				id++
				return id, nil
			}})
		if err != nil || res.Sent != len(s.Messages) || res.FirstID != 1 || res.LastID != int64(len(s.Messages)) {
			t.Fatalf("speed %v: %+v, %v", speed, res, err)
		}
		want := time.Duration(0)
		if speed > 0 {
			want = time.Duration(float64(span) / speed)
		}
		if d := res.Elapsed - want; d < -time.Millisecond || d > time.Millisecond {
			t.Fatalf("speed %v: took %s, want %s", speed, res.Elapsed, want)
		}
	}
}

// A message Send refuses is counted and left out of the accepted stream; play goes on.
func TestPlayCountsFailures(t *testing.T) {
	s := generate(t, Options{Flights: 5, Seed: 1})
	res, err := Play(context.Background(), s, PlayOptions{Send: func(_ context.Context, i int, m Message) (int64, error) {
		if i%2 == 1 {
			return 0, errors.New("busy")
		}
		return int64(i + 1), nil
	}})
	if err != nil || res.Failed != len(s.Messages)/2 || res.Sent+res.Failed != len(s.Messages) || len(res.Errors) == 0 {
		t.Fatalf("%+v, %v", res, err)
	}
	if n := len(s.Accepted(res).Messages); n != res.Sent {
		t.Fatalf("accepted stream has %d messages, %d sent", n, res.Sent)
	}
}

// Play gives up after GiveUpAfter refusals in a row, not before.
func TestPlayGivesUp(t *testing.T) {
	s := generate(t, Options{Flights: 5, Seed: 1})
	calls := 0
	res, err := Play(context.Background(), s, PlayOptions{GiveUpAfter: 3, Send: func(_ context.Context, i int, m Message) (int64, error) {
		calls++
		if i == 0 || i >= 2 {
			return 0, errors.New("no such host")
		}
		return 1, nil
	}})
	if !errors.Is(err, ErrGaveUp) || calls != 5 || res.Sent != 1 || res.Failed != 4 {
		t.Fatalf("calls %d, %+v, %v", calls, res, err)
	}
}
