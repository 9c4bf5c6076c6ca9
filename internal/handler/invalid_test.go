package handler

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

// schdWithInvalid decodes a SCHD message built from fltrs and adds the invalid FLTRs to its
// body, as the codec does for FLTRs it cannot accept.
func schdWithInvalid(t *testing.T, styp string, fltrs []string, invalid ...sis.Invalid) *sis.Message {
	t.Helper()
	msg := decodeRaw(t, []byte(schdMsg(styp, fltrs...)))
	body := msg.Body.(*sis.SchdBody)
	body.Invalid = append(body.Invalid, invalid...)
	return msg
}

func writes(d pipeline.Decision) (written, deleted []int64) {
	for _, w := range d.Flights {
		if w.Delete {
			deleted = append(deleted, w.FLID)
		} else {
			written = append(written, w.FLID)
		}
	}
	slices.Sort(written)
	slices.Sort(deleted)
	return written, deleted
}

func hasWarning(d pipeline.Decision, part string) bool {
	return slices.ContainsFunc(d.Warnings, func(w string) bool { return strings.Contains(w, part) })
}

var badMVIN = sis.Invalid{Index: 2, Key: "7002", Class: pipeline.Malformed, Reason: `MVIN "d" is not A or D`}

// TestSnapshotKeepsTheFlightOfAnInvalidFltr: a snapshot with an invalid FLTR applies the
// valid ones and replaces the window around them, but the invalid FLTR's flight is neither
// written nor deleted, and the warning names it. Replayed, it changes nothing and the day's
// generation fields stay the same.
func TestSnapshotKeepsTheFlightOfAnInvalidFltr(t *testing.T) {
	v := baseView(t) // 7002 09:15, 7004 09:30, 7005 09:40, 7001 12:30, 7003 12:40
	stored7002 := v.flights[7002]
	// Window [09:00, 12:30]: 7004 and 7005 are not named and go; 7002 is named by the
	// invalid FLTR and stays; 7003 (12:40) is outside.
	fltrs := []string{fltr(8001, "CA8001", "A", "15MAR260900"), fltr(7001, "CA4103", "D", "15MAR261230")}
	msg := schdWithInvalid(t, "DNLD", fltrs, badMVIN)
	d := decide(t, v, msg)
	written, deleted := writes(d)
	if !slices.Equal(written, []int64{7001, 8001}) || !slices.Equal(deleted, []int64{7004, 7005}) {
		t.Fatalf("written %v deleted %v, want [7001 8001] and [7004 7005]", written, deleted)
	}
	for _, e := range d.Events {
		if e.Key == "7002" {
			t.Errorf("event %s for the invalid FLTR's flight", e.Target)
		}
	}
	if !hasWarning(d, `FLTR[2] FLID 7002 left out: MVIN "d" is not A or D`) {
		t.Errorf("warnings %q do not name FLTR[2] FLID 7002", d.Warnings)
	}
	want := `SCHD DNLD: 3 FLTR; 2 flights written, 2 deleted, 0 unchanged; 1 invalid FLTR left out, stored flights kept`
	if d.Note != want {
		t.Errorf("note %q, want %q", d.Note, want)
	}
	v.apply(d)
	if !bytes.Equal(v.flights[7002], stored7002) {
		t.Errorf("flight 7002 changed: %s", v.flights[7002])
	}
	gen := genFields(t, d, "2026-03-15")
	if gen == nil {
		t.Fatal("no generation for 2026-03-15")
	}
	again := decide(t, v, schdWithInvalid(t, "DNLD", fltrs, badMVIN))
	if len(again.Flights) != 0 || len(again.Events) != 0 || !bytes.Equal(genFields(t, again, "2026-03-15"), gen) {
		t.Fatalf("replayed snapshot with an invalid FLTR: %d writes, %d events, generation\n%s\nwant\n%s",
			len(again.Flights), len(again.Events), genFields(t, again, "2026-03-15"), gen)
	}
	if !strings.Contains(again.Note, "nothing changed") {
		t.Errorf("replay note %q does not say nothing changed", again.Note)
	}
}

// TestSnapshotWithAnInvalidFltrWithoutFlid: an invalid FLTR whose FLID could not be read might
// name any stored flight, so the window replacement only inserts and updates.
func TestSnapshotWithAnInvalidFltrWithoutFlid(t *testing.T) {
	v := baseView(t)
	before := v.ids()
	fltrs := []string{fltr(8001, "CA8001", "A", "15MAR260900"), fltr(7001, "CA4103", "D", "15MAR261230")}
	d := decide(t, v, schdWithInvalid(t, "RESP", fltrs, sis.Invalid{Index: 1, Class: pipeline.Malformed, Reason: `FLID "7o02" is not a number`}))
	written, deleted := writes(d)
	if len(deleted) != 0 || !slices.Equal(written, []int64{7001, 8001}) {
		t.Fatalf("written %v deleted %v, want [7001 8001] and nothing deleted", written, deleted)
	}
	if !hasWarning(d, `FLTR[1] (FLID not readable) left out: FLID "7o02" is not a number`) || !hasWarning(d, "deleted nothing") {
		t.Errorf("warnings %q", d.Warnings)
	}
	if !strings.Contains(d.Note, "nothing deleted") {
		t.Errorf("note %q does not say nothing was deleted", d.Note)
	}
	v.apply(d)
	if got := v.ids(); !slices.Equal(got, append(slices.Clone(before), 8001)) {
		t.Errorf("flights %v, want %v and 8001", got, before)
	}
}

// TestSchdUpsertAndDeleteWithInvalidFltrs: ADFT (and any upserting STYP) and DEL apply their
// valid FLTRs and leave the flights of the invalid ones as stored.
func TestSchdUpsertAndDeleteWithInvalidFltrs(t *testing.T) {
	for _, c := range []struct {
		styp           string
		fltrs          []string
		wantW, wantD   []int64
		invalidKey     string
		wantNotePrefix string
	}{
		{"ADFT", []string{strings.Replace(fltr(7004, "CA4104", "A", "15MAR260930"), "320", "333", 1)}, []int64{7004}, nil, "7005",
			"SCHD ADFT: 2 FLTR; 1 flight written, 0 deleted, 0 unchanged; 1 invalid FLTR left out"},
		{"UPDT", []string{fltr(8002, "CA8002", "D", "15MAR261500")}, []int64{8002}, nil, "7004",
			"SCHD UPDT: 2 FLTR; 1 flight written"},
		{"DEL", []string{fltr(7005, "CA4106", "A", "15MAR260940")}, nil, []int64{7005}, "7004",
			"SCHD DEL: 2 FLTR; 1 flight deleted, 0 not stored; 1 invalid FLTR left out"},
	} {
		t.Run(c.styp, func(t *testing.T) {
			v := baseView(t)
			stored := v.flights[7004]
			inv := sis.Invalid{Index: 2, Key: c.invalidKey, Class: pipeline.Malformed, Reason: "SODT: missing"}
			d := decide(t, v, schdWithInvalid(t, c.styp, c.fltrs, inv))
			w, del := writes(d)
			if !slices.Equal(w, c.wantW) || !slices.Equal(del, c.wantD) {
				t.Fatalf("written %v deleted %v, want %v and %v", w, del, c.wantW, c.wantD)
			}
			if !hasWarning(d, "FLTR[2] FLID "+c.invalidKey+" left out: SODT: missing") {
				t.Errorf("warnings %q", d.Warnings)
			}
			if !strings.HasPrefix(d.Note, c.wantNotePrefix) {
				t.Errorf("note %q, want it to start %q", d.Note, c.wantNotePrefix)
			}
			if c.invalidKey == "7004" {
				v.apply(d)
				if !bytes.Equal(v.flights[7004], stored) {
					t.Errorf("flight 7004 of the invalid FLTR changed: %s", v.flights[7004])
				}
			}
		})
	}
}

// TestSnapshotHoldsAFlidAlsoInAnInvalidFltr: when a valid and an invalid FLTR name the same
// FLID, which one is right is unknown: the stored flight is kept and the valid one not applied.
func TestSnapshotHoldsAFlidAlsoInAnInvalidFltr(t *testing.T) {
	v := baseView(t)
	stored := v.flights[7001]
	changed := strings.Replace(fltr(7001, "CA4103", "D", "15MAR261230"), "320", "777", 1)
	d := decide(t, v, schdWithInvalid(t, "DNLD", []string{changed, fltr(8001, "CA8001", "A", "15MAR260900")},
		sis.Invalid{Index: 3, Key: "7001", Class: pipeline.CodecError, Reason: "FLID already used by FLTR[1]"}))
	for _, w := range d.Flights {
		if w.FLID == 7001 {
			t.Fatalf("flight 7001 written (delete %v) though an invalid FLTR names it", w.Delete)
		}
	}
	if !hasWarning(d, "FLTR FLID 7001 not applied: the invalid FLTR[3] names the same flight") {
		t.Errorf("warnings %q", d.Warnings)
	}
	v.apply(d)
	if !bytes.Equal(v.flights[7001], stored) {
		t.Errorf("flight 7001 changed")
	}
}

// TestSnapshotWithOnlyInvalidFltrs applies and deletes nothing.
func TestSnapshotWithOnlyInvalidFltrs(t *testing.T) {
	v := baseView(t)
	d := decide(t, v, schdWithInvalid(t, "DNLD", nil, badMVIN, sis.Invalid{Index: 1, Reason: "FLID: missing"}))
	if !d.Empty() {
		t.Fatalf("decision %+v", d)
	}
	want := "SCHD DNLD: 2 FLTR; no valid FLTR; nothing applied; 2 invalid FLTR left out, stored flights kept"
	if d.Note != want || len(d.Warnings) != 3 {
		t.Errorf("note %q (want %q), warnings %q", d.Note, want, d.Warnings)
	}
}

const erutStop = `<ERUT RTNO="1"><APCD>PEK</APCD><SCDT>15MAR260700</SCDT></ERUT>`

// TestScheduleKeepsTheRouteWhenTheFltrHasNone: docs/sis-format.md §3.5 step 4, the legacy keeps the
// stored ERUT of an existing flight when the FLTR has none; a FLTR with ERUT replaces it.
func TestScheduleKeepsTheRouteWhenTheFltrHasNone(t *testing.T) {
	for _, styp := range []string{"ADFT", "UPD", "DNLD", "RESP"} {
		t.Run(styp, func(t *testing.T) {
			v := baseView(t)
			route := v.record(t, 7002).ERUT
			if len(route) != 2 {
				t.Fatalf("stored ERUT of 7002: %+v", route)
			}
			noRoute := strings.Replace(fltr(7002, "CA4102", "A", "15MAR260915"), "320", "333", 1)
			v.apply(decide(t, v, decodeRaw(t, []byte(schdMsg(styp, noRoute)))))
			r := v.record(t, 7002)
			if r.ACFT != "333" || len(r.ERUT) != 2 || r.ERUT[0].APCD != route[0].APCD || r.ERUT[1].APCD != route[1].APCD {
				t.Fatalf("after a FLTR without ERUT: ACFT %q ERUT %+v, want 333 and the stored route", r.ACFT, r.ERUT)
			}
			withRoute := strings.Replace(noRoute, "</FLTR>", erutStop+"</FLTR>", 1)
			v.apply(decide(t, v, decodeRaw(t, []byte(schdMsg(styp, withRoute)))))
			if r := v.record(t, 7002); len(r.ERUT) != 1 || r.ERUT[0].APCD != "PEK" {
				t.Fatalf("after a FLTR with ERUT: %+v, want the new one-stop route", r.ERUT)
			}
		})
	}
	// A new flight without ERUT has none.
	v := baseView(t)
	v.apply(decide(t, v, decodeRaw(t, []byte(schdMsg("ADFT", fltr(8003, "CA8003", "D", "15MAR261600"))))))
	if r := v.record(t, 8003); r.ERUT != nil {
		t.Errorf("new flight ERUT %+v", r.ERUT)
	}
}

func stts(code, desc string) string {
	return `<STTS><STTC>` + code + `</STTC><STTD>` + desc + `</STTD></STTS>`
}

// refWithInvalid decodes an STTS message of styp with recs and adds the invalid records.
func refWithInvalid(t *testing.T, styp string, recs []string, invalid ...sis.Invalid) *sis.Message {
	t.Helper()
	raw := `<?xml version="1.0" encoding="UTF-8"?><MSG><META><SNDR>AODB</SNDR><SEQN>7</SEQN><DTTM>20260315080000</DTTM>` +
		`<TYPE>STTS</TYPE><STYP>` + styp + `</STYP></META><RECS>` + itoa(int64(len(recs))) + `</RECS>` + strings.Join(recs, "") + `</MSG>`
	msg := decodeRaw(t, []byte(raw))
	body := msg.Body.(*sis.RefBody)
	body.Invalid = append(body.Invalid, invalid...)
	return msg
}

func refOps(d pipeline.Decision) []string {
	var out []string
	for _, c := range d.Ref {
		switch c.Op {
		case pipeline.RefReplace:
			keys := []string{}
			for _, r := range c.Records {
				keys = append(keys, r.Key)
			}
			out = append(out, string(c.Op)+" "+strings.Join(keys, ",")+" keep="+strings.Join(c.Keep, ",")+
				map[bool]string{true: " no-delete", false: ""}[c.NoDelete])
		default:
			out = append(out, string(c.Op)+" "+c.Record.Key)
		}
	}
	return out
}

var badSTTS = sis.Invalid{Index: 2, Key: "ARR", Class: pipeline.Malformed, Reason: `ABNS "X" is not Y or N`}

// TestRefHandler: other STYPs upsert with a warning; invalid records are listed and kept as
// stored (Keep on a replace, NoDelete when a key is unreadable); a replace is never a wipe.
func TestRefHandler(t *testing.T) {
	two := []string{stts("DEP", "departed"), stts("LND", "landed")}
	noKey := sis.Invalid{Index: 3, Class: pipeline.Malformed, Reason: "STTC: missing"}
	for _, c := range []struct {
		name     string
		styp     string
		recs     []string
		invalid  []sis.Invalid
		ops      []string
		warnings []string
		note     string
		skip     bool
	}{
		{name: "other STYP upserts", styp: "XYZ", recs: two,
			ops:      []string{"UPSERT DEP", "UPSERT LND"},
			warnings: []string{"STYP XYZ treated as an update, as the legacy does"},
			note:     "STTS XYZ: 2 records to insert or update"},
		{name: "UPD with an invalid record", styp: "UPD", recs: two, invalid: []sis.Invalid{badSTTS},
			ops:      []string{"UPSERT DEP", "UPSERT LND"},
			warnings: []string{`STTS record 2 key "ARR" left out: ABNS "X" is not Y or N; the stored record is kept as it is`},
			note:     "STTS UPD: 2 records to insert or update, 1 invalid kept as stored"},
		{name: "DEL with an invalid record", styp: "DEL", recs: two[:1], invalid: []sis.Invalid{badSTTS},
			ops:  []string{"DELETE DEP"},
			note: "STTS DEL: 1 record to delete, 1 invalid kept as stored"},
		{name: "DNLD keeps the invalid key", styp: "DNLD", recs: two, invalid: []sis.Invalid{badSTTS},
			ops:  []string{"REPLACE DEP,LND keep=ARR"},
			note: "STTS DNLD: 2 records replacing the stored ones, 1 invalid kept as stored"},
		{name: "RESP with an unreadable key deletes nothing", styp: "RESP", recs: two, invalid: []sis.Invalid{badSTTS, noKey},
			ops: []string{"REPLACE DEP,LND keep=ARR no-delete"},
			warnings: []string{`STTS record 3 (key not readable) left out: STTC: missing`,
				"1 invalid STTS record(s) without a readable key: the RESP replace deleted nothing this time (insert and update only)"},
			note: "STTS RESP: 2 records to insert or update, nothing deleted (an invalid record has no key), 2 invalid kept as stored"},
		{name: "DNLD of only invalid records is no wipe", styp: "DNLD", invalid: []sis.Invalid{badSTTS},
			warnings: []string{"STTS DNLD has no valid record: nothing replaced or deleted"},
			note:     "STTS DNLD: 0 records, nothing deleted (no valid record), 1 invalid kept as stored; nothing changed"},
		{name: "empty DNLD is skipped", styp: "DNLD", skip: true},
		{name: "a valid record sharing an invalid one's key is held", styp: "DNLD",
			recs: []string{stts("ARR", "arrived"), stts("DEP", "departed")}, invalid: []sis.Invalid{badSTTS},
			ops:      []string{"REPLACE DEP keep=ARR"},
			warnings: []string{`STTS key "ARR" not applied: an invalid record has the same key`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := decideErr(nil, refWithInvalid(t, c.styp, c.recs, c.invalid...))
			if c.skip {
				if _, ok := AsSkip(err); !ok {
					t.Fatalf("err %v, want a skip", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := refOps(d); !slices.Equal(got, c.ops) {
				t.Errorf("changes %q, want %q", got, c.ops)
			}
			for _, w := range c.warnings {
				if !hasWarning(d, w) {
					t.Errorf("warnings %q lack %q", d.Warnings, w)
				}
			}
			for _, x := range c.invalid {
				if x.Key != "" && !hasWarning(d, `key "`+x.Key+`" left out`) {
					t.Errorf("warnings %q do not list invalid record %d", d.Warnings, x.Index)
				}
			}
			if c.note != "" && d.Note != c.note {
				t.Errorf("note %q, want %q", d.Note, c.note)
			}
		})
	}
}

// TestNotes: each handler says what it did, and says so when it changed nothing.
func TestNotes(t *testing.T) {
	for _, c := range []struct {
		name string
		msg  string
		want string
	}{
		{"snapshot of the stored board", "", "SCHD DNLD: 3 FLTR; nothing changed: 3 flights unchanged"},
		{"snapshot of past days only", schdMsg("DNLD", fltr(1, "CA0001", "D", "14MAR261000"), fltr(2, "CA0002", "D", "13MAR261000")),
			"SCHD DNLD: 2 FLTR; 2 FLTR before today ignored; nothing applied"},
		{"DEL of flights not stored", schdMsg("DEL", fltr(9, "CA0009", "D", "15MAR261000")),
			"SCHD DEL: 1 FLTR; nothing changed: none of the 1 listed flights is stored"},
		{"FLOP that changes nothing", string(flopMsg("STND", `<FLOP><FLID>7002</FLID><FFID>X</FFID><STND>213</STND></FLOP>`)),
			"FLOP STND: 1 record; nothing changed"},
		{"FLOP FDEL", string(flopMsg("FDEL", `<FLOP><FLID>7003</FLID><FFID>X</FFID><FDEL/></FLOP>`)),
			"FLOP FDEL: 1 record; 1 flight written, 1 deleted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := baseView(t)
			delete(v.flights, 7004) // in the window of dnld.xml, which does not name them
			delete(v.flights, 7005)
			var msg *sis.Message
			if c.msg == "" {
				msg = decodeFile(t, "../../testdata/schd/dnld.xml")
			} else {
				msg = decodeRaw(t, []byte(c.msg))
			}
			if d := decide(t, v, msg); d.Note != c.want {
				t.Errorf("note %q, want %q", d.Note, c.want)
			}
		})
	}
}
