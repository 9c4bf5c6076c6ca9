// Package simulate generates the SIS traffic an AODB sends on one airport day: reference data,
// the day's schedule (a SCHD DNLD of every flight), then the flight operations (FLOP) that day
// produces for each flight — stand and gate allocations, check-in, delays, boarding, chocks on
// and off, baggage belts, status changes, a few cancellations and diversions — in the order
// they happen, each stamped with the simulated time it is sent at. Optionally it mixes in
// faults (malformed bodies, FLOPs for unknown flights, an STYP msgx does not handle, a resent
// SEQN), and it knows for every message the final state msgx gives it, so a run can be checked
// against a server's counts. The same Options (and Seed) give the same messages, byte for byte.
//
// `msgx simulate` posts the stream to a server, paced by a speed factor, or writes it to files.
package simulate

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/suggest"
)

// Fault is a kind of bad message mixed into the stream.
type Fault string

// The faults --faults names.
const (
	// Malformed is a message that breaks SIS itself (cut short, a misspelt payload element, a
	// value outside its enumeration): DEAD/MALFORMED.
	Malformed Fault = "malformed"
	// Orphan is a FLOP for a flight the schedule never had: parked DEAD/ORPHAN.
	Orphan Fault = "orphan"
	// UnknownSTYP is a FLOP with an STYP msgx has no decoder for (ESTT): parked DEAD/UNSUPPORTED.
	UnknownSTYP Fault = "unknown-styp"
	// DuplicateSEQN is an earlier message sent again with the same SEQN: SKIPPED as a duplicate.
	DuplicateSEQN Fault = "duplicate-seqn"
)

// Faults lists every fault, in the order they are named.
var Faults = []Fault{Malformed, Orphan, UnknownSTYP, DuplicateSEQN}

// ParseFaults reads a comma-separated list of faults ("all" is every one; empty is none). An
// unknown name is an error that says what the name may have meant and which faults there are.
func ParseFaults(s string) ([]Fault, error) {
	var out []Fault
	for _, w := range strings.Split(s, ",") {
		w = strings.ToLower(strings.TrimSpace(w))
		switch {
		case w == "":
			continue
		case w == "all":
			return append([]Fault(nil), Faults...), nil
		}
		ok := false
		for _, f := range Faults {
			if string(f) == w {
				out = append(out, f)
				ok = true
			}
		}
		if !ok {
			return nil, fmt.Errorf("unknown fault %q%s; faults are %s, or all", w, suggest.DidYouMean(w, FaultNames()), strings.Join(FaultNames(), ", "))
		}
	}
	return out, nil
}

// FaultNames returns the names of Faults, for messages and suggestions.
func FaultNames() []string {
	out := make([]string, len(Faults))
	for i, f := range Faults {
		out[i] = string(f)
	}
	return out
}

// MaxFlights is the largest schedule Generate makes (ten times a busy hub's day; the flight
// numbers of the ten airlines run out at about 90,000).
const MaxFlights = 20000

// Options say what day to simulate and how.
type Options struct {
	Flights int            // how many flights the schedule has (at least 1)
	Day     time.Time      // the flights' local day; only its date in Loc counts
	Loc     *time.Location // the airport's zone (sis.timezone)
	// First is when the first scheduled time falls, after local midnight (default 06:00);
	// Span is how long the scheduled times are spread over (default 16h). The stream itself
	// starts earlier (reference data, the schedule, allocations before the first flight) and
	// ends later (late flights, baggage).
	First, Span time.Duration
	Seed        int64   // the same seed gives the same messages
	Faults      []Fault // the faults to mix in
	// FaultRate is the share of the FLOPs each fault adds (default 0.01; each listed fault
	// appears at least once).
	FaultRate float64
}

// Expect is the final state msgx gives a message: SUCCEEDED, SKIPPED, or DEAD with a class.
type Expect struct {
	State pipeline.ProcStatus
	Class pipeline.ErrorClass // for DEAD
}

// String is "SUCCEEDED", "SKIPPED" or "DEAD/ORPHAN".
func (e Expect) String() string {
	if e.Class != "" {
		return string(e.State) + "/" + string(e.Class)
	}
	return string(e.State)
}

// Message is one message of the stream.
type Message struct {
	At     time.Time // the simulated time it is sent (its META DTTM)
	Tag    string    // TYPE-STYP as written (a malformed one may not decode to it)
	FLID   int64     // the flight it is about (0: none)
	Fault  Fault     // the fault it carries ("" for none)
	Expect Expect    // the final state msgx gives it
	Body   []byte    // the SIS XML
}

// Stream is a simulated day.
type Stream struct {
	Messages []Message // in the order they are sent
	Flights  []Flight  // the schedule
	SeqBase  int64     // the SEQN of the first message; the others follow
}

// Flight is one flight of the schedule and what happens to it.
type Flight struct {
	FLID      int64
	Airline   string
	Number    string // with the airline prefix: CA4101
	Arrival   bool
	Intl      bool
	SODT      time.Time
	Delay     time.Duration // how late it goes off or on block
	Cancelled bool
	Diverted  string // the airport an arrival diverts to ("" when it does not)
	Aircraft  string
	Reg       string
	Stand     string
	Gate      string
	Other     string // the origin (arrivals) or destination (departures)
	Turn      int64  // the FLID of the other leg of the turnaround (0: none)
}

// FFID is the composite key ALCD-FLNO-MVIN-SODT-FLIN.
func (f Flight) ffid(loc *time.Location) string {
	return fmt.Sprintf("%s-%s-%s-%s-%s", f.Airline, f.Number, f.mvin(), sisTime(f.SODT, loc), f.flin())
}

func (f Flight) mvin() string {
	if f.Arrival {
		return "A"
	}
	return "D"
}

func (f Flight) flin() string {
	if f.Intl {
		return "I"
	}
	return "D"
}

// Summary counts a stream's messages by what they are and by the final state msgx gives them.
type Summary struct {
	Messages int            `json:"messages"`
	Flights  int            `json:"flights"`
	ByType   map[string]int `json:"by_type"`  // TYPE-STYP → count
	Expected map[string]int `json:"expected"` // SUCCEEDED, SKIPPED, DEAD → count
	DeadBy   map[string]int `json:"dead_by_class"`
	Faults   map[string]int `json:"faults"`
	// Cancelled and Diverted count the flights the stream cancels and diverts.
	Cancelled int `json:"cancelled"`
	Diverted  int `json:"diverted"`
}

// Summarize counts s.
func (s *Stream) Summarize() Summary {
	sum := Summary{Messages: len(s.Messages), Flights: len(s.Flights), ByType: map[string]int{},
		Expected: map[string]int{string(pipeline.Succeeded): 0, string(pipeline.Skipped): 0, string(pipeline.Dead): 0},
		DeadBy:   map[string]int{}, Faults: map[string]int{}}
	for _, m := range s.Messages {
		sum.ByType[m.Tag]++
		sum.Expected[string(m.Expect.State)]++
		if m.Expect.State == pipeline.Dead {
			sum.DeadBy[string(m.Expect.Class)]++
		}
		if m.Fault != "" {
			sum.Faults[string(m.Fault)]++
		}
	}
	for _, f := range s.Flights {
		if f.Cancelled {
			sum.Cancelled++
		}
		if f.Diverted != "" {
			sum.Diverted++
		}
	}
	return sum
}

// Generate builds the stream of a day.
func Generate(opt Options) (*Stream, error) {
	if opt.Flights < 1 {
		return nil, fmt.Errorf("simulate: flights must be at least 1, got %d", opt.Flights)
	}
	if opt.Flights > MaxFlights {
		return nil, fmt.Errorf("simulate: at most %d flights, got %d", MaxFlights, opt.Flights)
	}
	if opt.Loc == nil {
		opt.Loc = time.UTC
	}
	if opt.First == 0 {
		opt.First = 6 * time.Hour
	}
	if opt.Span <= 0 {
		opt.Span = 16 * time.Hour
	}
	opt.FaultRate = pipeline.OrDefault(opt.FaultRate, 0.01)
	if opt.FaultRate > 0.5 {
		return nil, fmt.Errorf("simulate: fault rate %v is over 0.5", opt.FaultRate)
	}
	y, mo, d := opt.Day.In(opt.Loc).Date()
	g := &gen{
		opt: opt,
		loc: opt.Loc,
		day: time.Date(y, mo, d, 0, 0, 0, 0, opt.Loc),
		rnd: rand.New(rand.NewPCG(uint64(opt.Seed), 0x6d736778)),
	}
	// Every seed has its own block of SEQNs and FLIDs, so runs with different seeds against
	// one server neither collide as duplicates nor touch each other's flights.
	block := int64(uint64(opt.Seed)*0x9E3779B97F4A7C15>>40) % 900
	g.seq = (block + 100) * 10_000_000
	g.flidBase = (block + 100) * 10_000_000
	g.flights()
	for i := range g.fl {
		g.operations(&g.fl[i])
	}
	first, last := g.msgs[0].At, g.msgs[0].At
	for _, p := range g.msgs {
		if p.At.Before(first) {
			first = p.At
		}
		if p.At.After(last) {
			last = p.At
		}
	}
	// The AODB sends its reference data, then the day's schedule, before the first operation.
	g.reference(first.Add(-20 * time.Minute))
	g.schedule(first.Add(-10 * time.Minute))
	g.faults(first.Add(-9*time.Minute), last)
	return g.stream(), nil
}

// gen holds a generation in progress.
type gen struct {
	opt      Options
	loc      *time.Location
	day      time.Time
	rnd      *rand.Rand
	seq      int64 // the next SEQN
	flidBase int64
	fl       []Flight
	msgs     []pending
}

// pending is a message with its place in time; equal times keep the order they were made in.
type pending struct {
	Message
	order int
	dupOf int // for a DuplicateSEQN: the order of the message it repeats
}

func (g *gen) pick(xs []string) string { return xs[g.rnd.IntN(len(xs))] }

// chance reports true with probability p.
func (g *gen) chance(p float64) bool { return g.rnd.Float64() < p }

// add queues a message; its SEQN and DTTM are set in stream() once the order is known.
func (g *gen) add(at time.Time, tag string, flid int64, body string) *pending {
	g.msgs = append(g.msgs, pending{Message: Message{At: at, Tag: tag, FLID: flid,
		Expect: Expect{State: pipeline.Succeeded}, Body: []byte(body)}, order: len(g.msgs)})
	return &g.msgs[len(g.msgs)-1]
}

// stream orders the messages by time and writes each one's envelope: SEQNs in the order sent;
// a duplicate is the very message it repeats (the same SEQN, DTTM and body), sent again.
func (g *gen) stream() *Stream {
	sort.SliceStable(g.msgs, func(i, j int) bool {
		if !g.msgs[i].At.Equal(g.msgs[j].At) {
			return g.msgs[i].At.Before(g.msgs[j].At)
		}
		return g.msgs[i].order < g.msgs[j].order
	})
	s := &Stream{Flights: g.fl, SeqBase: g.seq}
	sent := map[int][]byte{} // order → the enveloped body
	for _, p := range g.msgs {
		m := p.Message
		if p.Fault == DuplicateSEQN {
			m.Body = sent[p.dupOf]
		} else {
			m.Body = envelope(g.seq, m.At, m.Tag, m.Body, g.loc)
			sent[p.order] = m.Body
			g.seq++
		}
		s.Messages = append(s.Messages, m)
	}
	return s
}

// envelope wraps body (the part after META) with META.
func envelope(seqn int64, at time.Time, tag string, body []byte, loc *time.Location) []byte {
	typ, styp, _ := strings.Cut(tag, "-")
	var b strings.Builder
	b.Grow(len(body) + 300)
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<MSG xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="unisysaodbsis.xsd">` + "\n")
	fmt.Fprintf(&b, "<META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>%s</DTTM><TYPE>%s</TYPE><STYP>%s</STYP></META>\n",
		seqn, at.In(loc).Format("20060102150405"), typ, styp)
	b.Write(body)
	b.WriteString("</MSG>\n")
	return []byte(b.String())
}

// sisTime formats t as ddMMMyyHHmm in loc.
func sisTime(t time.Time, loc *time.Location) string {
	return strings.ToUpper(t.In(loc).Format("02Jan061504"))
}

// xmlText escapes s for element text and attribute values.
func xmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
