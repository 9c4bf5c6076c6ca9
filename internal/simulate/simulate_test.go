package simulate

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

var shanghai = func() *time.Location {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		panic(err)
	}
	return loc
}()

func generate(t *testing.T, opt Options) *Stream {
	t.Helper()
	if opt.Loc == nil {
		opt.Loc = shanghai
	}
	if opt.Day.IsZero() {
		opt.Day = time.Date(2026, 12, 4, 0, 0, 0, 0, shanghai)
	}
	s, err := Generate(opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Every message decodes with the codec msgx runs, without a warning, or fails with exactly
// the class its fault should give; duplicates repeat an earlier message's identity.
func TestEveryMessageDecodesOrFailsAsExpected(t *testing.T) {
	s := generate(t, Options{Flights: 300, Seed: 7, Faults: Faults, FaultRate: 0.02})
	identities := map[string]int{}
	for i, m := range s.Messages {
		msg, err := sis.Decode(m.Body, sis.Options{Location: shanghai})
		switch m.Expect.State {
		case pipeline.Succeeded, pipeline.Skipped:
			if err != nil {
				t.Fatalf("message %d (%s, fault %q) does not decode: %v\n%s", i, m.Tag, m.Fault, err, m.Body)
			}
			if w := msg.Warnings; len(w) > 0 {
				t.Fatalf("message %d (%s) decodes with warnings %v\n%s", i, m.Tag, w, m.Body)
			}
			if msg.Tag() != m.Tag {
				t.Fatalf("message %d decodes as %s, not %s", i, msg.Tag(), m.Tag)
			}
			id := pipeline.Identity(msg.Meta.SNDR, msg.Meta.TYPE, msg.Meta.STYP, msg.Meta.SEQN, msg.Meta.Day, false)
			first, seen := identities[id]
			if m.Fault == DuplicateSEQN {
				if !seen || s.Messages[first].Fault != "" || !bytes.Equal(s.Messages[first].Body, m.Body) {
					t.Fatalf("duplicate %d (%s) does not repeat an earlier message", i, id)
				}
				continue
			}
			if seen {
				t.Fatalf("messages %d and %d share the identity %s", first, i, id)
			}
			identities[id] = i
		case pipeline.Dead:
			if m.Expect.Class == pipeline.Orphan {
				// ORPHAN is the handler's finding: the codec reads it, the flight is not stored.
				if err != nil {
					t.Fatalf("orphan %d does not decode: %v", i, err)
				}
				flid := msg.Body.(*sis.FlopBody).Records[0].FLID
				for _, f := range s.Flights {
					if f.FLID == flid {
						t.Fatalf("orphan %d is for scheduled flight %d", i, flid)
					}
				}
				continue
			}
			if err == nil {
				t.Fatalf("message %d (%s, fault %q) decodes, want %s\n%s", i, m.Tag, m.Fault, m.Expect.Class, m.Body)
			}
			if c := pipeline.ClassOf(err); c != m.Expect.Class {
				t.Fatalf("message %d (%s, fault %q) fails with %s (%v), want %s", i, m.Tag, m.Fault, c, err, m.Expect.Class)
			}
		default:
			t.Fatalf("message %d expects %v", i, m.Expect)
		}
	}
}

// Other seeds, sizes and fault rates decode as expected too (a small day, an odd count, the
// largest fault rate).
func TestManySeeds(t *testing.T) {
	for seed := int64(1); seed <= 15; seed++ {
		opt := Options{Flights: int(seed*7) % 60, Seed: seed, Faults: Faults, FaultRate: 0.5}
		if opt.Flights == 0 {
			opt.Flights = 1
		}
		s := generate(t, opt)
		for i, m := range s.Messages {
			_, err := sis.Decode(m.Body, sis.Options{Location: shanghai})
			ok := err == nil
			if m.Expect.State == pipeline.Dead && m.Expect.Class != pipeline.Orphan {
				ok = err != nil && pipeline.ClassOf(err) == m.Expect.Class
			}
			if !ok {
				t.Fatalf("seed %d, message %d (%s, fault %q): %v", seed, i, m.Tag, m.Fault, err)
			}
		}
	}
	if _, err := Generate(Options{Flights: MaxFlights + 1, Loc: shanghai}); err == nil {
		t.Fatal("more than MaxFlights flights")
	}
}

// The stream is in time order, starts with the reference data and the schedule, and every
// FLOP is for a flight of the schedule unless it is an orphan.
func TestStreamOrderAndSchedule(t *testing.T) {
	s := generate(t, Options{Flights: 101, Seed: 3})
	if len(s.Flights) != 101 {
		t.Fatalf("%d flights, want 101", len(s.Flights))
	}
	for i := 1; i < len(s.Messages); i++ {
		if s.Messages[i].At.Before(s.Messages[i-1].At) {
			t.Fatalf("message %d (%s at %s) before message %d (%s)", i, s.Messages[i].Tag, s.Messages[i].At, i-1, s.Messages[i-1].At)
		}
	}
	schd := -1
	for i, m := range s.Messages {
		if m.Tag == "SCHD-DNLD" {
			schd = i
		}
		if strings.HasPrefix(m.Tag, "FLOP-") && schd < 0 {
			t.Fatalf("FLOP %d before the schedule", i)
		}
	}
	msg, err := sis.Decode(s.Messages[schd].Body, sis.Options{Location: shanghai})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(msg.Body.(*sis.SchdBody).Flights); n != 101 {
		t.Fatalf("the schedule has %d flights", n)
	}
	sum := s.Summarize()
	if sum.Expected["SUCCEEDED"] != len(s.Messages) || len(sum.DeadBy) != 0 {
		t.Fatalf("a stream without faults expects %v", sum.Expected)
	}
	for _, tag := range []string{"FLOP-CHOT", "FLOP-GTDT", "FLOP-PSDT", "FLOP-BOTM", "FLOP-DELY", "FLOP-CLDT", "FLOP-FTSS", "FLOP-CKDT"} {
		if sum.ByType[tag] == 0 {
			t.Errorf("no %s in a day of 101 flights: %v", tag, sum.ByType)
		}
	}
}

// A day of 1,000 flights cancels and diverts a few.
func TestCancellationsAndDiversions(t *testing.T) {
	sum := generate(t, Options{Flights: 1000, Seed: 11}).Summarize()
	if sum.Cancelled == 0 || sum.Cancelled > 100 || sum.Diverted == 0 || sum.Diverted > 50 {
		t.Fatalf("cancelled %d, diverted %d of 1000", sum.Cancelled, sum.Diverted)
	}
	if sum.ByType["FLOP-CNCL"] == 0 || sum.ByType["FLOP-FDIV"] == 0 {
		t.Fatalf("no CNCL or FDIV: %v", sum.ByType)
	}
}

// The same options give the same bytes; another seed another day, with other SEQNs and FLIDs.
func TestDeterministic(t *testing.T) {
	opt := Options{Flights: 50, Seed: 42, Faults: Faults}
	a, b := generate(t, opt), generate(t, opt)
	if len(a.Messages) != len(b.Messages) {
		t.Fatalf("%d and %d messages", len(a.Messages), len(b.Messages))
	}
	for i := range a.Messages {
		if !bytes.Equal(a.Messages[i].Body, b.Messages[i].Body) || !a.Messages[i].At.Equal(b.Messages[i].At) {
			t.Fatalf("message %d differs", i)
		}
	}
	opt.Seed = 43
	c := generate(t, opt)
	if c.SeqBase == a.SeqBase || c.Flights[0].FLID == a.Flights[0].FLID {
		t.Fatalf("seeds 42 and 43 share SEQN base %d or FLID %d", a.SeqBase, a.Flights[0].FLID)
	}
}

// Each listed fault appears at the rate asked (at least once), and the summary counts them
// under the states msgx gives them.
func TestFaultCounts(t *testing.T) {
	s := generate(t, Options{Flights: 200, Seed: 5, Faults: []Fault{Orphan, DuplicateSEQN}, FaultRate: 0.01})
	sum := s.Summarize()
	flops := 0
	for _, m := range s.Messages {
		if strings.HasPrefix(m.Tag, "FLOP-") && m.Fault == "" {
			flops++
		}
	}
	want := max(1, (flops+50)/100)
	if sum.Faults["orphan"] != want || sum.Faults["duplicate-seqn"] != want || sum.Faults["malformed"] != 0 {
		t.Fatalf("faults %v, want %d orphans and duplicates of %d FLOPs", sum.Faults, want, flops)
	}
	if sum.DeadBy["ORPHAN"] != want || sum.Expected["SKIPPED"] != want || sum.Expected["DEAD"] != want ||
		sum.Expected["SUCCEEDED"] != len(s.Messages)-2*want {
		t.Fatalf("expected %v, dead by class %v", sum.Expected, sum.DeadBy)
	}
}

func TestParseFaults(t *testing.T) {
	if f, err := ParseFaults("malformed, ORPHAN"); err != nil || fmt.Sprint(f) != "[malformed orphan]" {
		t.Fatalf("ParseFaults = %v, %v", f, err)
	}
	if f, err := ParseFaults("all"); err != nil || len(f) != len(Faults) {
		t.Fatalf("all = %v, %v", f, err)
	}
	want := `unknown fault "orphans" (did you mean orphan?); faults are malformed, orphan, unknown-styp, duplicate-seqn, or all`
	if _, err := ParseFaults("orphans"); err == nil || err.Error() != want {
		t.Fatalf("an unknown fault: %v, want %s", err, want)
	}
}
