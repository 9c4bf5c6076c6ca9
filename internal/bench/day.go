package bench

import (
	"context"
	"fmt"
	"math"
	evt "msgx/internal/event"
	"strings"
	"time"

	"msgx/internal/simulate"
	"msgx/internal/store"
)

// The day workload (the default): two airport days of the simulator (internal/simulate, no
// faults), each its reference data, its schedule (a SCHD DNLD of every flight) and then the
// FLOPs the day produces, across every STYP, in time order. Day A is processed from a
// backlog (as fast as possible); day B is posted at the steady rate with the pump running,
// and each message's latency runs from the start of its HTTP request to the dispatcher's
// SENT commit on each of the four targets, KAFKA_SCHD included.

// Workload names.
const (
	WorkloadDay     = "day"
	WorkloadClassic = "classic"
)

// dayPart is one simulated day split in two: what the AODB sends before the first FLOP
// (reference data and the schedule) and the rest (the FLOPs, in time order).
type dayPart struct {
	head, ops []string
	flights   int
}

// splitDay splits s at its first FLOP.
func splitDay(s *simulate.Stream) dayPart {
	p := dayPart{flights: len(s.Flights)}
	for i, m := range s.Messages {
		if strings.HasPrefix(m.Tag, "FLOP-") {
			for _, o := range s.Messages[i:] {
				p.ops = append(p.ops, string(o.Body))
			}
			return p
		}
		p.head = append(p.head, string(m.Body))
	}
	return p
}

// dayFlights is how many flights give about n FLOPs in a simulated day (flights, when set,
// decides).
func dayFlights(n, flights int, loc *time.Location) (int, error) {
	if flights > 0 {
		return flights, nil
	}
	const probe = 200
	s, err := simulate.Generate(simulate.Options{Flights: probe, Day: time.Now(), Loc: loc, Seed: 1})
	if err != nil {
		return 0, fmt.Errorf("size the simulated day: %w", err)
	}
	perFlight := float64(len(splitDay(s).ops)) / probe
	return min(simulate.MaxFlights, max(1, int(math.Round(float64(n)/perFlight)))), nil
}

// simulatedDay generates the day (local midnight) of the given size with seed; every seed has
// its own SEQNs and FLIDs, so two days never collide.
func simulatedDay(day time.Time, flights int, seed int64, loc *time.Location) (dayPart, error) {
	s, err := simulate.Generate(simulate.Options{Flights: flights, Day: day, Loc: loc, Seed: seed})
	if err != nil {
		return dayPart{}, fmt.Errorf("simulate a day of %d flights: %w", flights, err)
	}
	return splitDay(s), nil
}

// dayBench is the day workload's run: day A for the backlog, day B for the steady rate.
type dayBench struct {
	*bench
	a, b dayPart
	// backlogStart and backlogDone are when day A's backlog began and ended processing: the
	// past times asOf rebuilds its board at.
	backlogStart, backlogDone time.Time
}

func newDayBench(b *bench) (*dayBench, error) {
	loc := b.o.Config.Location()
	flights, err := dayFlights(b.o.Messages, b.o.Flights, loc)
	if err != nil {
		return nil, err
	}
	// Tomorrow and the day after: no flight is in the past, even if the day turns mid-run.
	tomorrow := b.sched.Day
	d := &dayBench{bench: b}
	if d.a, err = simulatedDay(tomorrow, flights, 1, loc); err != nil {
		return nil, err
	}
	if d.b, err = simulatedDay(tomorrow.AddDate(0, 0, 1), flights, 2, loc); err != nil {
		return nil, err
	}
	return d, nil
}

// steps are the day workload's phases, in order.
func (d *dayBench) steps() []step {
	return []step{
		{fmt.Sprintf("reference data and schedule of a day of %d flights", d.a.flights), d.schedule},
		{"count the writes", d.countWrites},
		{fmt.Sprintf("accept the day's %d FLOPs from %d clients", len(d.a.ops), d.o.Clients), d.accept},
		{"note the time the backlog starts", d.markBacklogStart},
		{fmt.Sprintf("process the backlog of %d FLOPs", len(d.a.ops)), d.process},
		{"note the time the backlog was done", d.markBacklog},
		{"stop counting the writes", d.writesCounted},
		{fmt.Sprintf("reference data and schedule of the next day (%d flights)", d.b.flights), d.nextSchedule},
		{fmt.Sprintf("the board of the first day (%d flights) as of times in its backlog, against a live board refresh (asked %s after it)", d.a.flights, d.o.AsOfWait), d.asOf},
		{fmt.Sprintf("request→SENT of the next day's %d FLOPs at %g/s", len(d.b.ops), d.o.Rate), d.latency},
	}
}

// postInOrder posts msgs one after the other and processes them.
func (d *dayBench) postInOrder(ctx context.Context, msgs []string) (time.Duration, error) {
	for _, m := range msgs {
		if _, err := d.cl.post(ctx, m); err != nil {
			return 0, err
		}
	}
	return d.processAll(ctx)
}

func (d *dayBench) schedule(ctx context.Context, r *Result) error {
	r.Flights = d.a.flights
	took, err := d.postInOrder(ctx, d.a.head)
	r.SnapshotS = took.Seconds()
	return err
}

func (d *dayBench) nextSchedule(ctx context.Context, _ *Result) error {
	_, err := d.postInOrder(ctx, d.b.head)
	return err
}

func (d *dayBench) accept(ctx context.Context, r *Result) error {
	r.Messages = len(d.a.ops)
	return d.acceptAll(ctx, d.a.ops, r)
}

func (d *dayBench) process(ctx context.Context, r *Result) error {
	return d.processBacklog(ctx, len(d.a.ops), r)
}

// latency posts day B's FLOPs at the steady rate with the pump running, waits for every
// target to have sent them (KAFKA_SCHD at its next flush), and measures per message and
// target the time from its request's start to the SENT commit of its last event there.
func (d *dayBench) latency(ctx context.Context, r *Result) error {
	if err := d.sys.startPump(ctx); err != nil {
		return err
	}
	defer d.sys.stopPump(ctx)
	posted, took, err := d.postAtRate(ctx, d.b.ops)
	if err != nil {
		return err
	}
	r.LatencyRatePerS = PerSecond(len(d.b.ops), took)
	if err := d.waitProcessed(ctx); err != nil {
		return err
	}
	if err := d.drained(ctx); err != nil {
		return err
	}
	events, err := d.sys.eventsOf(ctx, posted)
	if err != nil {
		return err
	}
	decided, err := d.sys.decidedAt(ctx, posted)
	if err != nil {
		return err
	}
	lat, err := d.rec.targetLatencies(ctx, posted, events, decided)
	if err != nil {
		return err
	}
	r.SentObserved = "commit"
	lat.report(r)
	return nil
}

// decidedAt reads when the pump decided each posted message (PROCESSED_AT, written in the
// transaction it committed the message in).
func (s *system) decidedAt(ctx context.Context, posted map[int64]postTimes) (map[int64]time.Time, error) {
	lo, hi := idRange(posted)
	rows, err := s.db.SQLDB().QueryContext(ctx, `SELECT CMINMSGS_ID, PROCESSED_AT FROM PROC_STATE WHERE CMINMSGS_ID BETWEEN ? AND ?`, lo, hi)
	if err != nil {
		return nil, store.Unavailable(fmt.Errorf("read the latency phase's decisions: %w", err))
	}
	defer rows.Close()
	out := make(map[int64]time.Time, len(posted))
	for rows.Next() {
		var id int64
		var at store.NullTime
		if err := rows.Scan(&id, &at); err != nil {
			return nil, store.Unavailable(fmt.Errorf("read the latency phase's decisions: %w", err))
		}
		if _, ok := posted[id]; ok && at.Valid {
			out[id] = at.Time
		}
	}
	if err := rows.Err(); err != nil {
		return nil, store.Unavailable(fmt.Errorf("read the latency phase's decisions: %w", err))
	}
	return out, nil
}

// idRange returns the lowest and highest id of posted.
func idRange(posted map[int64]postTimes) (lo, hi int64) {
	lo = math.MaxInt64
	for id := range posted {
		lo, hi = min(lo, id), max(hi, id)
	}
	return lo, hi
}

// event is one event of a message the latency phase posted.
type event struct {
	id, msg int64
	target  string
}

// eventsOf reads the events of the posted messages (their ids are those of the phase), one
// per target: a shared one (evt.Shared) is every target's.
func (s *system) eventsOf(ctx context.Context, posted map[int64]postTimes) ([]event, error) {
	lo, hi := idRange(posted)
	rows, err := s.db.SQLDB().QueryContext(ctx, `SELECT EVENT_ID, CMINMSGS_ID, TARGET FROM MSG_EVENT WHERE CMINMSGS_ID BETWEEN ? AND ?`, lo, hi)
	if err != nil {
		return nil, store.Unavailable(fmt.Errorf("read the latency phase's events: %w", err))
	}
	defer rows.Close()
	var out []event
	for rows.Next() {
		var e event
		if err := rows.Scan(&e.id, &e.msg, &e.target); err != nil {
			return nil, store.Unavailable(fmt.Errorf("read the latency phase's events: %w", err))
		}
		if _, ok := posted[e.msg]; !ok {
			continue
		}
		if e.target != evt.Shared {
			out = append(out, e)
			continue
		}
		for _, t := range s.targets { // a shared event: every target takes it
			e.target = t
			out = append(out, e)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, store.Unavailable(fmt.Errorf("read the latency phase's events: %w", err))
	}
	return out, nil
}
