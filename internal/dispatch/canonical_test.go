package dispatch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/dispatch"
	"msgx/internal/event"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/target"
	"msgx/internal/testkit"
)

// changes are flight changes of the shapes that render differently: an update with CJK text,
// nested values and a cleared field, an insert, a delete (es-delete; HTML characters the
// flop payload escapes) and a schedule's insert with a window.
var changes = []event.FlightChange{
	{FLID: 101, Op: event.Update, Record: json.RawMessage(`{"FLID":101,"REMC":"延误 🛫","DELY":[{"CODE":"93","DURA":15}]}`),
		Changes: []event.Change{
			{Key: "DELY", Old: json.RawMessage(`null`), New: json.RawMessage(`[{"CODE":"93","DURA":15}]`)},
			{Key: "REMC", Old: json.RawMessage(`"晚点"`), New: json.RawMessage(`"延误 🛫"`)},
			{Key: "STND", Old: json.RawMessage(`"201"`), New: json.RawMessage(`null`)},
		}},
	{FLID: 102, Op: event.Insert, Record: json.RawMessage(`{"FLID":102,"FLNO":"CA1"}`),
		Changes: []event.Change{{Key: "FLID", Old: json.RawMessage(`null`), New: json.RawMessage(`102`)}, {Key: "FLNO", Old: json.RawMessage(`null`), New: json.RawMessage(`"CA1"`)}}},
	{FLID: 103, Op: event.Delete, Record: json.RawMessage(`{"FLID":103,"CSFL":["CA1","<&>"]}`),
		Changes: []event.Change{{Key: "CSFL", Old: json.RawMessage(`["CA1","\u003c\u0026\u003e"]`), New: json.RawMessage(`null`)}, {Key: "FLID", Old: json.RawMessage(`103`), New: json.RawMessage(`null`)}}},
	{FLID: 104, Op: event.Insert, Schedule: true, Window: &event.Window{From: t0, To: t0.Add(48 * time.Hour)}, Record: json.RawMessage(`{"FLID":104}`),
		Changes: []event.Change{{Key: "FLID", Old: json.RawMessage(`null`), New: json.RawMessage(`104`)}}},
}

// handlerRow is the kind and payload of the row the handler writes for c to a target of
// family, written by the family's own renderer (not event.Render, which delivery uses).
func handlerRow(t *testing.T, family string, c *event.FlightChange) (string, string) {
	t.Helper()
	switch family {
	case event.TargetFlop:
		return event.KindFlop, string(event.Flop(c))
	case event.TargetSchd:
		return event.KindSchd, string(event.Schd(c))
	case event.TargetNotify:
		p, err := event.Notify(c)
		if err != nil {
			t.Fatal(err)
		}
		return event.KindNotify, string(p)
	}
	kind, p := event.ES(c)
	return kind, string(p)
}

// canonical is Encode's bytes of c.
func canonical(t *testing.T, c *event.FlightChange) string {
	t.Helper()
	b, err := event.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// families are the test's targets: the four emitted ones, a webhook copy of the flop target,
// REDIS_FLIGHT (copy of ES_FLIGHT: its sink reads Kind and Delete) and LEGACY_FLOP (copy of
// REDIS_NOTIFY: its sink reads the envelope's kind).
var families = map[string]string{
	"KAFKA_FLOP": event.TargetFlop, "KAFKA_SCHD": event.TargetSchd, "REDIS_NOTIFY": event.TargetNotify, "ES_FLIGHT": event.TargetES,
	"WEBHOOK_OPS": event.TargetFlop, "REDIS_FLIGHT": event.TargetES, "LEGACY_FLOP": event.TargetNotify,
}

// sameRecord fails t unless got (of a canonical row) is want (of the rendered row of the
// same change) but for the event id, in the record and its envelope.
func sameRecord(t *testing.T, what string, got, want target.Record) {
	t.Helper()
	body := func(r target.Record) target.Record {
		r.EventID = 0
		if i := bytes.Index(r.Value, []byte(`,"msg_id":`)); strings.HasPrefix(string(r.Value), `{"event_id":`) && i > 0 {
			r.Value = r.Value[i:]
		}
		return r
	}
	g, w := body(got), body(want)
	if fmt.Sprintf("%s|%s|%s|%s|%v|%s|%s", g.Target, g.Kind, g.Key, g.TypeTag, g.Delete, g.Document, g.Value) !=
		fmt.Sprintf("%s|%s|%s|%s|%v|%s|%s", w.Target, w.Kind, w.Key, w.TypeTag, w.Delete, w.Document, w.Value) {
		t.Errorf("%s: the canonical row delivered\n %s %s delete=%v %s\nthe rendered row\n %s %s delete=%v %s",
			what, g.Target, g.Kind, g.Delete, g.Value, w.Target, w.Kind, w.Delete, w.Value)
	}
}

// A canonical row (kind change) is delivered to every target, emitted or a copy, as the row
// the handler renders for the same change: the same kind, document, delete flag and
// envelope; the schedule target's batch holds the same bytes.
func TestCanonicalRowsDeliverAsRendered(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		names := make([]string, 0, len(families))
		for name := range families {
			names = append(names, name)
		}
		h := newHarness(t, db, dispatch.Options{Policy: policy, SchdTarget: "KAFKA_SCHD", Families: families}, names...)
		insertAll := func(rendered bool) {
			for name, family := range families {
				for i := range changes {
					c := &changes[i]
					e := ev{target: name, key: strconv.FormatInt(c.FLID, 10), kind: event.KindChange, payload: canonical(t, c)}
					if rendered {
						e.kind, e.payload = handlerRow(t, family, c)
					}
					insert(t, db, e)
				}
			}
		}
		deliverAll := func() map[string][]target.Record {
			out := map[string][]target.Record{}
			for _, name := range names {
				s := h.sinks[name]
				before := s.numCalls()
				if name == "KAFKA_SCHD" {
					if n, _ := h.flush(t, true); n != len(changes) {
						t.Fatalf("%s: flushed %d, want %d", name, n, len(changes))
					}
				} else if n, _ := h.deliver(t, name); n != len(changes) {
					t.Fatalf("%s: sent %d, want %d", name, n, len(changes))
				}
				s.mu.Lock()
				for _, call := range s.calls[before:] {
					out[name] = append(out[name], call...)
				}
				s.mu.Unlock()
			}
			return out
		}
		insertAll(true)
		want := deliverAll()
		insertAll(false)
		got := deliverAll()
		for _, name := range names {
			if len(got[name]) != len(want[name]) {
				t.Fatalf("%s: %d records from canonical rows, %d from rendered ones", name, len(got[name]), len(want[name]))
			}
			for i := range got[name] {
				sameRecord(t, fmt.Sprintf("%s record %d", name, i), got[name][i], want[name][i])
			}
		}
		// The records are what the handler's rows give, not merely alike: the delete is one.
		if es := got["REDIS_FLIGHT"]; es[2].Kind != event.KindESDelete || !es[2].Delete || string(es[2].Document) != `{"FLID":103}` {
			t.Errorf("REDIS_FLIGHT delete: %s delete=%v %s", es[2].Kind, es[2].Delete, es[2].Document)
		}
	})
}

// A canonical row that does not decode, or whose target has no family, can never be
// delivered: it goes DEAD as MALFORMED at once, saying why, and its target moves on; in the
// schedule batch it dies alone and the rest is sent.
func TestCanonicalRowThatDoesNotRenderGoesDead(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, dispatch.Options{Policy: policy, SchdTarget: "KAFKA_SCHD", Families: families},
			"KAFKA_FLOP", "KAFKA_SCHD", "WEBHOOK_NEW")
		good := canonical(t, &changes[0])
		corrupt := strings.Replace(good, `{"v":1`, `{"v":9`, 1)

		a := insert(t, db, ev{target: "KAFKA_FLOP", key: "101", kind: event.KindChange, payload: good})
		bad := insert(t, db, ev{target: "KAFKA_FLOP", key: "101", kind: event.KindChange, payload: corrupt})
		b := insert(t, db, ev{target: "KAFKA_FLOP", key: "101", kind: event.KindChange, payload: good})
		if n, _ := h.deliver(t, "KAFKA_FLOP"); n != 1 {
			t.Fatalf("first step sent %d, want the one before the corrupt row", n)
		}
		h.deliver(t, "KAFKA_FLOP") // the corrupt row is the head: DEAD
		if n, _ := h.deliver(t, "KAFKA_FLOP"); n != 1 {
			t.Fatalf("after the corrupt row: sent %d, want 1", n)
		}
		wantState(t, db, "SENT", a, b)
		r := get(t, db, bad)
		if r.State != "DEAD" || r.Class.String != "MALFORMED" || !strings.Contains(r.LastError.String, "decode flight event") {
			t.Errorf("corrupt canonical row: %+v", r)
		}

		orphan := insert(t, db, ev{target: "WEBHOOK_NEW", kind: event.KindChange, payload: good})
		own := insert(t, db, ev{target: "WEBHOOK_NEW", kind: "flop", payload: `{"FLID":1}`})
		h.deliver(t, "WEBHOOK_NEW")
		if n, _ := h.deliver(t, "WEBHOOK_NEW"); n != 1 {
			t.Fatalf("WEBHOOK_NEW after its dead head: sent %d, want its own rendered row", n)
		}
		wantState(t, db, "SENT", own)
		if r := get(t, db, orphan); r.State != "DEAD" || r.Class.String != "MALFORMED" || !strings.Contains(r.LastError.String, "no family") {
			t.Errorf("canonical row of a target without a family: %+v", r)
		}

		s1 := insert(t, db, ev{target: "KAFKA_SCHD", key: "101", kind: event.KindChange, payload: good})
		s2 := insert(t, db, ev{target: "KAFKA_SCHD", key: "102", kind: event.KindChange, payload: corrupt})
		s3 := insert(t, db, ev{target: "KAFKA_SCHD", key: "104", kind: event.KindChange, payload: canonical(t, &changes[3])})
		if n, _ := h.flush(t, true); n != 2 {
			t.Fatalf("schedule batch: sent %d, want 2", n)
		}
		wantState(t, db, "SENT", s1, s3)
		if r := get(t, db, s2); r.State != "DEAD" || r.Class.String != "MALFORMED" {
			t.Errorf("corrupt canonical schedule row: %+v", r)
		}
		if got, want := string(h.sinks["KAFKA_SCHD"].last(t)[0].Value), `[`+string(changes[0].Record)+`,{"FLID":104}]`; got != want {
			t.Errorf("schedule batch %s, want %s", got, want)
		}
	})
}

// The status's targets section shows a head that is a canonical row as it is delivered: the
// kind and payload rendered for its target's family.
func TestStatusShowsACanonicalHeadRendered(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		c := &changes[2]
		insert(t, db, ev{target: "ES_FLIGHT", key: "103", kind: event.KindChange, payload: canonical(t, c)})
		insert(t, db, ev{target: "WEBHOOK_OPS", key: "103", kind: event.KindChange, payload: canonical(t, c)})
		v, err := dispatch.StatusSection(db.Outbox, testkit.NewClock(t0), families)(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		heads := map[string]string{}
		for _, s := range v.([]client.TargetStatus) {
			if s.Head != nil {
				heads[s.Target] = s.Head.Kind + " " + string(s.Head.Payload)
			}
		}
		esKind, es := handlerRow(t, event.TargetES, c)
		flopKind, flop := handlerRow(t, event.TargetFlop, c)
		if heads["ES_FLIGHT"] != esKind+" "+es || heads["WEBHOOK_OPS"] != flopKind+" "+flop {
			t.Errorf("heads shown as %q, want ES_FLIGHT %s %s and WEBHOOK_OPS %s %s", heads, esKind, es, flopKind, flop)
		}
	})
}
