package handler

import (
	"strings"
	"testing"

	"msgx/internal/pipeline"
)

// outOfOrder is a view for a message applied after later ones, which set what n says.
type outOfOrder struct {
	*memView
	n *pipeline.Newer
}

func (v outOfOrder) Newer() *pipeline.Newer { return v.n }

// newerAfter folds into a Newer for message id what each later message of msgs (by id) sets
// of flights and reference TYPEs, as the pump does.
func newerAfter(t *testing.T, id int64, flights []int64, refTypes []string, msgs map[int64][]byte) *pipeline.Newer {
	t.Helper()
	n := &pipeline.Newer{Msg: id}
	want, types := map[int64]bool{}, map[string]bool{}
	for _, f := range flights {
		want[f] = true
	}
	for _, typ := range refTypes {
		types[typ] = true
	}
	for later, raw := range msgs {
		Asserts(decodeRaw(t, raw), later, n, want, types)
	}
	return n
}

// A message applied out of its order sets only the fields no later message set: a FLOP's
// stand set later stays, the fields it alone sets are applied, its events carry only what it
// set, and the note names each field it left; a later FDEL keeps it from changing the flight,
// and an older FDEL does not delete a flight a later message set.
func TestOutOfOrderKeepsWhatLaterMessagesSet(t *testing.T) {
	v := baseView(t)
	stand := func(st string) []byte {
		return flopMsg("STND", `<FLOP><FLID>7004</FLID><FFID>X</FFID><STND>`+st+`</STND></FLOP>`)
	}
	remc := flopMsg("REMC", `<FLOP><FLID>7004</FLID><FFID>X</FFID><REMC>DLA</REMC></FLOP>`)
	v.apply(decide(t, v, decodeRaw(t, stand("305")))) // message 9, applied in order
	// Message 5, parked, replayed now: sets STND 201 and, in a second message, REMC.
	n := newerAfter(t, 5, []int64{7004}, nil, map[int64][]byte{9: stand("305")})
	d := decide(t, outOfOrder{v, n}, decodeRaw(t, stand("201")))
	if len(d.Flights) != 0 || len(d.Events) != 0 || !strings.Contains(d.Note, "flight 7004 STND kept: set by message 9, newer") {
		t.Fatalf("an older stand over a newer one: writes %d, events %d, note %q", len(d.Flights), len(d.Events), d.Note)
	}
	d = decide(t, outOfOrder{v, n}, decodeRaw(t, remc))
	if len(d.Flights) != 1 || !strings.Contains(string(d.Events[0].Payload), `"REMC"`) || strings.Contains(d.Note, "kept") {
		t.Fatalf("a field no later message set: writes %d, events %v, note %q", len(d.Flights), d.Events, d.Note)
	}
	v.apply(d)
	if r := v.record(t, 7004); r.STND != "305" || r.REMC != "DLA" {
		t.Fatalf("stand %q, remark %q: want 305 and DLA", r.STND, r.REMC)
	}

	// An FDEL older than the stand does not delete the flight a later message set.
	d = decide(t, outOfOrder{v, n}, decodeRaw(t, flopMsg("FDEL", `<FLOP><FLID>7004</FLID><FFID>X</FFID><FDEL/></FLOP>`)))
	if len(d.Flights) != 0 || !strings.Contains(d.Note, "flight 7004 not deleted: set by message 9, newer") {
		t.Fatalf("an older FDEL: writes %+v, note %q", d.Flights, d.Note)
	}

	// A flight a later FDEL deleted: an older FLOP for it is not an orphan and changes nothing.
	fdel := flopMsg("FDEL", `<FLOP><FLID>7005</FLID><FFID>X</FFID><FDEL/></FLOP>`)
	v.apply(decide(t, v, decodeRaw(t, fdel)))
	n = newerAfter(t, 5, []int64{7005}, nil, map[int64][]byte{9: fdel})
	d, err := decideErr(outOfOrder{v, n}, decodeRaw(t, flopMsg("STND", `<FLOP><FLID>7005</FLID><FFID>X</FFID><STND>201</STND></FLOP>`)))
	if err != nil || len(d.Flights) != 0 || !strings.Contains(d.Note, "flight 7005 deleted kept: set by message 9, newer") {
		t.Fatalf("a FLOP for a flight a later FDEL deleted: %v, writes %+v, note %q", err, d.Flights, d.Note)
	}
}

// A schedule applied out of order leaves the fields a later FLOP set, and does not create
// again a flight a later FDEL deleted; a later schedule's FLTR sets every field it carries, so
// an older FLOP sets nothing of it but what the schedule keeps (CTOT).
func TestOutOfOrderSchedule(t *testing.T) {
	v := baseView(t)
	r := v.record(t, 7004)
	stand := flopMsg("STND", `<FLOP><FLID>7004</FLID><FFID>X</FFID><STND>305</STND></FLOP>`)
	v.apply(decide(t, v, decodeRaw(t, stand)))
	fltr := func(flid int64, st string) string {
		return `<FLTR><FLID>` + itoa(flid) + `</FLID><ALCD>CA</ALCD><FLNO>CA4104</FLNO><MVIN>A</MVIN><SODT>15MAR260930</SODT>` +
			`<FLTY>W</FLTY><FLIN>D</FLIN><ACFT>320</ACFT><STND>` + st + `</STND><REMC>SCH</REMC></FLTR>`
	}
	schd := []byte(`<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20260315080000</DTTM><TYPE>SCHD</TYPE><STYP>ADFT</STYP></META>` +
		`<SCHD><RECS>1</RECS>` + fltr(7004, "118") + `</SCHD></MSG>`)
	n := newerAfter(t, 5, []int64{7004}, nil, map[int64][]byte{9: stand})
	d := decide(t, outOfOrder{v, n}, decodeRaw(t, schd))
	v.apply(d)
	if got := v.record(t, 7004); got.STND != "305" || got.REMC != "SCH" || got.ACFT != "320" || !strings.Contains(d.Note, "STND kept: set by message 9") {
		t.Fatalf("an older schedule: stand %q remark %q aircraft %q (was %q), note %q", got.STND, got.REMC, got.ACFT, r.ACFT, d.Note)
	}

	// The schedule is message 9 now, a FLOP of message 5 replayed after it sets nothing it carries.
	n = newerAfter(t, 5, []int64{7004}, nil, map[int64][]byte{9: schd})
	d = decide(t, outOfOrder{v, n}, decodeRaw(t, flopMsg("ACFT", `<FLOP><FLID>7004</FLID><FFID>X</FFID><ACFT>333</ACFT></FLOP>`)))
	if len(d.Flights) != 0 || !strings.Contains(d.Note, "ACFT kept: set by message 9, newer") {
		t.Fatalf("an older FLOP over a newer schedule: writes %d, note %q", len(d.Flights), d.Note)
	}
	d = decide(t, outOfOrder{v, n}, decodeRaw(t, flopMsg("CTOT", `<FLOP><FLID>7004</FLID><FFID>X</FFID><CTOT>15MAR261000</CTOT></FLOP>`)))
	if len(d.Flights) != 1 {
		t.Fatalf("CTOT, which a schedule keeps: writes %d, note %q", len(d.Flights), d.Note)
	}

	// A later FDEL: the older schedule does not create the flight again.
	fdel := flopMsg("FDEL", `<FLOP><FLID>7104</FLID><FFID>X</FFID><FDEL/></FLOP>`)
	n = newerAfter(t, 5, []int64{7104}, nil, map[int64][]byte{9: fdel})
	d = decide(t, outOfOrder{v, n}, decodeRaw(t, []byte(strings.Replace(string(schd), fltr(7004, "118"), fltr(7104, "118"), 1))))
	if len(d.Flights) != 0 || !strings.Contains(d.Note, "flight 7104 not created again: deleted by message 9, newer") {
		t.Fatalf("an older schedule of a flight a later FDEL deleted: writes %+v, note %q", d.Flights, d.Note)
	}
}

// Reference data out of order: an older upsert or delete of a record a later message set is
// not applied; an older replace leaves the records later messages set as stored.
func TestOutOfOrderReference(t *testing.T) {
	v := baseView(t)
	airl := func(styp, itop, name string) []byte {
		return []byte(`<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20260315080000</DTTM><TYPE>AIRL</TYPE><STYP>` + styp + `</STYP></META>` +
			`<RECS>1</RECS><AIRL><ITOP>` + itop + `</ITOP><ICOP>` + itop + `A</ICOP><ONAM>` + name + `</ONAM><DORI>D</DORI></AIRL></MSG>`)
	}
	n := newerAfter(t, 5, nil, []string{"AIRL"}, map[int64][]byte{9: airl("DEL", "3U", "x"), 3: airl("ADD", "MU", "old")})
	d := decide(t, outOfOrder{v, n}, decodeRaw(t, airl("ADD", "3U", "Sichuan")))
	if len(d.Ref) != 0 || !strings.Contains(d.Note, "AIRL 3U record kept: set by message 9, newer") {
		t.Fatalf("an older ADD of a record a later DEL deleted: %+v, note %q", d.Ref, d.Note)
	}
	d = decide(t, outOfOrder{v, n}, decodeRaw(t, airl("ADD", "MU", "Eastern")))
	if len(d.Ref) != 1 {
		t.Fatalf("an ADD no later message overrides (message 3 is older): %+v, note %q", d.Ref, d.Note)
	}
	d = decide(t, outOfOrder{v, n}, decodeRaw(t, airl("DNLD", "MU", "Eastern")))
	if len(d.Ref) != 1 || d.Ref[0].Op != pipeline.RefReplace || strings.Join(d.Ref[0].Keep, ",") != "3U" {
		t.Fatalf("an older replace: %+v, note %q", d.Ref, d.Note)
	}
}
