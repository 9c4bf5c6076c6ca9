package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

var update = flag.Bool("update", false, "rewrite testdata/decisions/*.golden.json")

var shanghai = func() *time.Location {
	l, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		panic(err)
	}
	return l
}()

// memView is an in-memory View holding records and reference keys, with a fixed clock.
type memView struct {
	flights map[int64][]byte
	refs    map[string][]string
	now     time.Time
}

func (v *memView) Flight(_ context.Context, flid int64) ([]byte, bool, error) {
	b, ok := v.flights[flid]
	return b, ok, nil
}

func (v *memView) FlightsBetween(_ context.Context, from, to time.Time) ([][]byte, error) {
	var out [][]byte
	for _, id := range v.ids() {
		r, _ := decodeRecord(v.flights[id])
		if !r.SODT.Before(from) && !r.SODT.After(to) {
			out = append(out, v.flights[id])
		}
	}
	return out, nil
}

func (v *memView) CodeShareFlights(context.Context) ([][]byte, error) {
	var out [][]byte
	for _, id := range v.ids() {
		if r, _ := decodeRecord(v.flights[id]); r.MAID != nil {
			out = append(out, v.flights[id])
		}
	}
	return out, nil
}

func (v *memView) FlightsOf(_ context.Context, flids []int64) ([][]byte, error) {
	var out [][]byte
	for _, id := range flids {
		if b, ok := v.flights[id]; ok {
			out = append(out, b)
		}
	}
	return out, nil
}

func (v *memView) CodeSharesOf(_ context.Context, masters []int64) ([][]byte, error) {
	var out [][]byte
	for _, id := range v.ids() {
		if r, _ := decodeRecord(v.flights[id]); r.MAID != nil && slices.Contains(masters, *r.MAID) {
			out = append(out, v.flights[id])
		}
	}
	return out, nil
}

func (v *memView) RefKeys(_ context.Context, typ string) ([]string, error) { return v.refs[typ], nil }
func (v *memView) Now() time.Time                                          { return v.now }
func (v *memView) Location() *time.Location                                { return shanghai }

func (v *memView) ids() []int64 {
	ids := make([]int64, 0, len(v.flights))
	for id := range v.flights {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// apply writes a Decision's flight writes into the view, as the store would.
func (v *memView) apply(d pipeline.Decision) {
	for _, w := range d.Flights {
		if w.Delete {
			delete(v.flights, w.FLID)
		} else {
			v.flights[w.FLID] = w.Record
		}
	}
}

func (v *memView) record(t *testing.T, flid int64) *FlightRecord {
	t.Helper()
	b, ok := v.flights[flid]
	if !ok {
		t.Fatalf("flight %d not in the view", flid)
	}
	r, err := decodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// testNow is 08:00 local on 15 March 2026, the day of the test messages.
var testNow = time.Date(2026, 3, 15, 8, 0, 0, 0, shanghai)

func decodeFile(t *testing.T, path string) *sis.Message {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return decodeRaw(t, raw)
}

func decodeRaw(t *testing.T, raw []byte) *sis.Message {
	t.Helper()
	msg, err := sis.Decode(raw, sis.Options{Location: shanghai})
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return msg
}

// baseView holds the three flights of testdata/schd/dnld.xml (7001 departure, 7002 arrival,
// 7003 a code-share of 7001) as a snapshot stored them, plus 7004 and 7005 (arrivals).
func baseView(t *testing.T) *memView {
	t.Helper()
	v := &memView{flights: map[int64][]byte{}, refs: map[string][]string{}, now: testNow}
	d := decide(t, v, decodeFile(t, "../../testdata/schd/dnld.xml"))
	v.apply(d)
	for i, id := range []int64{7004, 7005} {
		r := &FlightRecord{Flight: sis.Flight{FLID: id, ALCD: "CA", FLNO: []string{"CA4104", "CA4106"}[i], MVIN: "A",
			SODT: time.Date(2026, 3, 15, 9, 30+10*i, 0, 0, shanghai).UTC(), FLTY: "W", FLIN: "D", ACFT: "321"}}
		b, err := encodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		v.flights[id] = b
	}
	return v
}

func decide(t *testing.T, v View, msg *sis.Message) pipeline.Decision {
	t.Helper()
	d, err := decideErr(v, msg)
	if err != nil {
		t.Fatalf("%s: %v", msg.Tag(), err)
	}
	return d
}

func decideErr(v View, msg *sis.Message) (pipeline.Decision, error) {
	return decideWith(Default(Options{}), v, msg)
}

// decideWith decides msg with the handler of r.
func decideWith(r *Registry, v View, msg *sis.Message) (pipeline.Decision, error) {
	h, ok := r.Lookup(msg.Tag())
	if !ok {
		return pipeline.Decision{}, pipeline.Errorf(pipeline.Unsupported, "no handler for %s", msg.Tag())
	}
	return h.Decide(context.Background(), v, msg)
}

// golden is what a golden file holds: the Decision, or the error class and text.
type golden struct {
	Decision   *pipeline.Decision `json:"decision,omitempty"`
	ErrorClass string             `json:"error_class,omitempty"`
	Error      string             `json:"error,omitempty"`
}

func checkGolden(t *testing.T, name string, d pipeline.Decision, err error) {
	t.Helper()
	g := golden{}
	if err != nil {
		g.ErrorClass, g.Error = string(pipeline.ClassOf(err)), err.Error()
	} else {
		d.Events = delivered(d) // the goldens hold what each target is delivered
		g.Decision = &d
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(g); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("../../testdata/decisions", name+".golden.json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, rerr := os.ReadFile(path)
	if rerr != nil {
		t.Fatalf("%v (run go test ./internal/handler -update to create it)", rerr)
	}
	if !bytes.Equal(want, b.Bytes()) {
		t.Errorf("%s: Decision differs from %s (run with -update to accept):\n%s", name, path, b.String())
	}
}

// TestGoldenDecisions applies every test message of testdata/flop, testdata/schd and
// testdata/schs to the base state and compares the Decision with its golden file.
func TestGoldenDecisions(t *testing.T) {
	for _, dir := range []string{"flop", "schd", "schs"} {
		files, _ := filepath.Glob(filepath.Join("../../testdata", dir, "*.xml"))
		if len(files) == 0 {
			t.Fatalf("no test messages in testdata/%s", dir)
		}
		for _, f := range files {
			name := dir + "_" + strings.TrimSuffix(filepath.Base(f), ".xml")
			t.Run(name, func(t *testing.T) {
				v := baseView(t)
				v.refs[SeasonType] = []string{"2025-03-30/2025-10-25", "2025-10-26/2026-03-28"}
				d, err := decideErr(v, decodeFile(t, f))
				checkGolden(t, name, d, err)
			})
		}
	}
}

// TestEveryTagHasAHandlerAndAMessage checks the registry covers the 48 FLOP STYPs and the
// SCHD and SCHS STYPs, and that testdata holds a message for each FLOP STYP.
func TestEveryTagHasAHandlerAndAMessage(t *testing.T) {
	r := Default(Options{})
	for _, s := range sis.FlopSTYPs() {
		if _, ok := r.Lookup("FLOP-" + s); !ok {
			t.Errorf("no handler for FLOP-%s", s)
		}
		if _, err := os.Stat(filepath.Join("../../testdata/flop", strings.ToLower(s)+".xml")); err != nil {
			t.Errorf("no test message for FLOP-%s", s)
		}
	}
	for _, tag := range []string{"SCHD-DNLD", "SCHD-RESP", "SCHD-DEL", "SCHD-ADFT", "SCHS-DNLD", "SCHS-RESP"} {
		if _, ok := r.Lookup(tag); !ok {
			t.Errorf("no handler for %s", tag)
		}
	}
	if n := len(sis.FlopSTYPs()); n != 48 {
		t.Errorf("%d FLOP STYPs, want 48", n)
	}
}

func flopMsg(styp, flops string) []byte {
	return []byte(`<?xml version="1.0" encoding="UTF-8"?><MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20260315080000</DTTM>` +
		`<TYPE>FLOP</TYPE><STYP>` + styp + `</STYP></META>` + flops + `</MSG>`)
}

func TestFlopOrphan(t *testing.T) {
	v := baseView(t)
	msg := decodeRaw(t, flopMsg("CTOT", `<FLOP><FLID>9999</FLID><FFID>X</FFID><CTOT>15MAR261300</CTOT></FLOP>`))
	d, err := decideErr(v, msg)
	if pipeline.ClassOf(err) != pipeline.Orphan || !d.Empty() {
		t.Fatalf("orphan FLOP: class %q, err %v, decision %+v", pipeline.ClassOf(err), err, d)
	}
}

// A FLOP message applies the records whose flights are stored and names each other record in
// its warnings, emitting events for the applied ones only; it is ORPHAN only when every record
// names a flight the store does not have.
func TestFlopPartialOrphan(t *testing.T) {
	v := baseView(t)
	delete(v.flights, 7005)
	d, err := decideErr(v, decodeFile(t, "../../testdata/flop/multi_chot.xml"))
	if err != nil {
		t.Fatalf("multi-FLOP with one orphan: %v", err)
	}
	var flids []int64
	for _, w := range d.Flights {
		flids = append(flids, w.FLID)
	}
	if !slices.Equal(flids, []int64{7002, 7004}) {
		t.Errorf("flights written %v, want the stored 7002 and 7004", flids)
	}
	for _, target := range []string{"KAFKA_FLOP", "REDIS_NOTIFY", "ES_FLIGHT"} {
		if keys := eventKeys(d, target); len(keys) != 2 || slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, "7005") }) {
			t.Errorf("%s events keyed %q, want one for each of 7002 and 7004", target, keys)
		}
	}
	want := []string{"FLOP[3] CHOT: flight FLID 7005 is not in the store (FFID CA-CA4106-A-15MAR260940-D); record not applied"}
	if !slices.Equal(d.Warnings, want) {
		t.Errorf("warnings %q, want %q", d.Warnings, want)
	}
	if want := "FLOP CHOT: 3 records; 2 flights written; 1 record for a flight not stored, not applied"; d.Note != want {
		t.Errorf("note %q, want %q", d.Note, want)
	}

	// Every record an orphan: the message is ORPHAN, naming each, and changes nothing.
	v = baseView(t)
	for _, id := range []int64{7002, 7004, 7005} {
		delete(v.flights, id)
	}
	d, err = decideErr(v, decodeFile(t, "../../testdata/flop/multi_chot.xml"))
	if pipeline.ClassOf(err) != pipeline.Orphan || !d.Empty() {
		t.Fatalf("multi-FLOP of orphans: class %q, err %v, decision %+v", pipeline.ClassOf(err), err, d)
	}
	for _, id := range []string{"FLID 7002", "FLID 7004", "FLID 7005"} {
		if !strings.Contains(err.Error(), id) {
			t.Errorf("ORPHAN error %q does not name %s", err, id)
		}
	}

	// A record for a flight an earlier record deleted is an orphan too.
	v = baseView(t)
	d = decide(t, v, decodeRaw(t, flopMsg("FDEL", `<FLOP><FLID>7004</FLID><FFID>X</FFID><FDEL/></FLOP><FLOP><FLID>7004</FLID><FFID>X</FFID><FDEL/></FLOP>`)))
	if len(d.Flights) != 1 || !d.Flights[0].Delete || len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "FLOP[2] FDEL: flight FLID 7004 was deleted by an earlier record") {
		t.Errorf("FDEL twice: writes %+v, warnings %q", d.Flights, d.Warnings)
	}

	// Nothing orphaned: every record applies, no warning.
	v = baseView(t)
	d = decide(t, v, decodeFile(t, "../../testdata/flop/multi_chot.xml"))
	if len(d.Flights) != 2 || len(d.Events) != len(d.Flights) || len(delivered(d)) != 4*len(d.Flights) || d.Warnings != nil { // 7005 has no chocks to clear
		t.Fatalf("multi-FLOP: %d writes, %d events, warnings %q", len(d.Flights), len(d.Events), d.Warnings)
	}
}

func TestFlopUnchangedIsEmpty(t *testing.T) {
	v := baseView(t)
	msg := decodeFile(t, "../../testdata/flop/chot.xml")
	d := decide(t, v, msg)
	if len(d.Flights) != 1 || len(d.Events) != 1 || len(delivered(d)) != 4 {
		t.Fatalf("first CHOT: %d writes, %d events", len(d.Flights), len(d.Events))
	}
	v.apply(d)
	if d := decide(t, v, msg); !d.Empty() {
		t.Fatalf("same CHOT again: %+v", d)
	}
}

func TestFlopClearAndReplace(t *testing.T) {
	v := baseView(t)
	// A: no value clears; B: empty text clears; E: empty group clears.
	for _, c := range []struct{ styp, body string }{
		{"FINT", `<FINT/>`},
		{"STND", `<STND></STND>`},
		{"CHOT", `<CHOT/>`},
		{"CNCL", `<CNCL>15MAR260700</CNCL>`},
		{"DELY", `<DELY CODE="WX" STRT="15MAR260915" DURA="0130">fog</DELY>`},
		{"GTDT", `<GTDT GTNO="2"><GATE>B20</GATE></GTDT><GTDT GTNO="1"><GATE>B11</GATE></GTDT>`},
	} {
		d := decide(t, v, decodeRaw(t, flopMsg(c.styp, `<FLOP><FLID>7002</FLID><FFID>X</FFID>`+c.body+`</FLOP>`)))
		v.apply(d)
	}
	r := v.record(t, 7002)
	if r.FINT != nil || r.STND != "" || r.CHOT != nil {
		t.Errorf("clears: FINT %v STND %q CHOT %v", r.FINT, r.STND, r.CHOT)
	}
	if r.CNCL == nil || !r.CNCL.Equal(time.Date(2026, 3, 15, 7, 0, 0, 0, shanghai)) {
		t.Errorf("CNCL %v", r.CNCL)
	}
	if len(r.DELY) != 2 || r.DELY[1].CODE != "WX" || r.DELY[1].DURA == nil || *r.DELY[1].DURA != 90 {
		t.Errorf("DELY merge/duration: %+v", r.DELY)
	}
	if len(r.GTDT) != 2 || r.GTDT[0].GTNO != 1 || r.GTDT[0].GATE != "B11" || r.GTDT[1].GATE != "B20" {
		t.Errorf("GTDT replace: %+v", r.GTDT)
	}
	d := decide(t, v, decodeRaw(t, flopMsg("CNCL", `<FLOP><FLID>7002</FLID><FFID>X</FFID><CNCL></CNCL></FLOP>`)))
	v.apply(d)
	if r := v.record(t, 7002); r.CNCL != nil {
		t.Errorf("un-cancel: CNCL %v", r.CNCL)
	}
}

func TestCodeShareMaintained(t *testing.T) {
	v := baseView(t)
	if r := v.record(t, 7001); !slices.Equal(r.CSFL, []string{"MU5402"}) {
		t.Fatalf("master 7001 after the snapshot: CSFL %v", r.CSFL)
	}
	// A second code-share of 7001 arrives by ADFT: the master gets it and its own events.
	adft := strings.Replace(schdMsg("ADFT", fltr(8001, "MU5403", "D", "15MAR261300")), "</FLTR>", "<MAID>7001</MAID></FLTR>", 1)
	d := decide(t, v, decodeRaw(t, []byte(adft)))
	v.apply(d)
	if r := v.record(t, 7001); !slices.Equal(r.CSFL, []string{"MU5402", "MU5403"}) {
		t.Fatalf("master after an insert: CSFL %v", r.CSFL)
	}
	if keys := eventKeys(d, TargetNotify); !slices.Equal(keys, []string{"7001", "8001"}) {
		t.Errorf("notifications for %v, want the new flight and its master", keys)
	}
	// FDEL of the first code-share removes it from the list.
	d = decide(t, v, decodeRaw(t, flopMsg("FDEL", `<FLOP><FLID>7003</FLID><FFID>X</FFID><FDEL/></FLOP>`)))
	v.apply(d)
	if r := v.record(t, 7001); !slices.Equal(r.CSFL, []string{"MU5403"}) {
		t.Fatalf("master after FDEL: CSFL %v", r.CSFL)
	}
	if _, ok := v.flights[7003]; ok {
		t.Fatal("FDEL kept the flight")
	}
}

func eventKeys(d pipeline.Decision, target string) []string {
	var out []string
	for _, e := range delivered(d) {
		if e.Target == target {
			out = append(out, e.Key)
		}
	}
	sort.Strings(out)
	return out
}

func fltr(flid int64, flno, mvin, sodt string) string {
	return `<FLTR><FLID>` + itoa(flid) + `</FLID><ALCD>` + flno[:2] + `</ALCD><FLNO>` + flno + `</FLNO><MVIN>` + mvin +
		`</MVIN><SODT>` + sodt + `</SODT><FLTY>J</FLTY><FLIN>D</FLIN><ACFT>320</ACFT></FLTR>`
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func schdMsg(styp string, fltrs ...string) string {
	return `<?xml version="1.0" encoding="UTF-8"?><MSG><META><SNDR>AODB</SNDR><SEQN>2</SEQN><DTTM>20260315080000</DTTM>` +
		`<TYPE>SCHD</TYPE><STYP>` + styp + `</STYP></META><SCHD><RECS>` + itoa(int64(len(fltrs))) + `</RECS>` +
		strings.Join(fltrs, "") + `</SCHD></MSG>`
}

func TestSnapshotWindowAndPastDays(t *testing.T) {
	v := &memView{flights: map[int64][]byte{}, refs: map[string][]string{}, now: testNow}
	seed := schdMsg("ADFT",
		fltr(1, "CA0001", "D", "15MAR260900"), // in the window, not in the snapshot: deleted
		fltr(2, "CA0002", "D", "15MAR261000"), // in the snapshot: updated
		fltr(3, "CA0003", "D", "15MAR262200"), // after the window: kept
		fltr(4, "CA0004", "D", "15MAR260700"), // before the window: kept
	)
	seedDec := decide(t, v, decodeRaw(t, []byte(seed)))
	v.apply(seedDec)
	flights := []string{fltr(2, "CA0002", "D", "15MAR261005"), fltr(6, "CA0006", "A", "15MAR261200"), strings.Replace(fltr(7, "CA0007", "A", "15MAR260800"), "320", "321", 1)}
	snap := schdMsg("DNLD", flights...)
	d := decide(t, v, decodeRaw(t, []byte(snap)))
	v.apply(d)
	// Window [08:00, 12:00]: 1 (09:00) goes, 4 (07:00) and 3 (22:00) stay.
	if got := v.ids(); !slices.Equal(got, []int64{2, 3, 4, 6, 7}) {
		t.Fatalf("flights after the snapshot %v, want [2 3 4 6 7]", got)
	}
	var deletes []int64
	for _, w := range d.Flights {
		if w.Delete {
			deletes = append(deletes, w.FLID)
		}
	}
	if !slices.Equal(deletes, []int64{1}) {
		t.Errorf("deleted %v, want [1]", deletes)
	}
	if len(d.Ref) != 1 || d.Ref[0].Type != SchdGenType || d.Ref[0].Record.Key != "2026-03-15" {
		t.Fatalf("generation changes %+v", d.Ref)
	}
	// The same snapshot again: no flight change, no event, the same generation fields.
	again := decide(t, v, decodeRaw(t, []byte(snap)))
	if len(again.Flights) != 0 || len(again.Events) != 0 || len(again.Ref) != 1 || !bytes.Equal(again.Ref[0].Record.Fields, d.Ref[0].Record.Fields) {
		t.Fatalf("replayed snapshot: %+v", again)
	}
	// With a FLTR of yesterday the window starts at today's midnight: 4 (07:00) goes too,
	// and yesterday's FLTR is ignored, counted, never stored.
	withPast := schdMsg("DNLD", append([]string{fltr(5, "CA0005", "D", "14MAR261000")}, flights...)...)
	d = decide(t, v, decodeRaw(t, []byte(withPast)))
	v.apply(d)
	if got := v.ids(); !slices.Equal(got, []int64{2, 3, 6, 7}) {
		t.Fatalf("flights after the snapshot with a past FLTR %v, want [2 3 6 7]", got)
	}
	if !strings.Contains(d.Note, "1 FLTR before today ignored") {
		t.Errorf("note %q does not count the past FLTR", d.Note)
	}
	// A day later every FLTR is in the past: nothing is applied or deleted.
	v.now = testNow.Add(24 * time.Hour)
	if d := decide(t, v, decodeRaw(t, []byte(snap))); !d.Empty() {
		t.Fatalf("snapshot of yesterday: %+v", d)
	}
}

func TestSnapshotKeepsFieldsFltrDoesNotCarry(t *testing.T) {
	v := baseView(t)
	v.apply(decide(t, v, decodeFile(t, "../../testdata/flop/ctot.xml")))
	before := v.record(t, 7001).CTOT
	if before == nil {
		t.Skip("testdata/flop/ctot.xml is not for flight 7001")
	}
	msg := decodeFile(t, "../../testdata/schd/dnld.xml")
	v.apply(decide(t, v, msg))
	if r := v.record(t, 7001); r.CTOT == nil || !r.CTOT.Equal(*before) {
		t.Fatalf("CTOT after a snapshot: %v, want %v", r.CTOT, before)
	}
}

func TestSchsKeepsCurrentAndPrevious(t *testing.T) {
	v := baseView(t)
	v.refs[SeasonType] = []string{"2024-10-27/2025-03-29", "2025-03-30/2025-10-25", "2025-10-26/2026-03-28"}
	d := decide(t, v, decodeFile(t, "../../testdata/schs/dnld.xml"))
	var del []string
	var up []string
	for _, r := range d.Ref {
		if r.Op == pipeline.RefDelete {
			del = append(del, r.Record.Key)
		} else {
			up = append(up, r.Record.Key)
		}
	}
	if !slices.Equal(up, []string{"2026-03-29/2026-10-24"}) {
		t.Fatalf("season upserts %v", up)
	}
	// Of the other stored seasons only the latest-starting one (the previous season) is kept.
	if !slices.Equal(del, []string{"2024-10-27/2025-03-29", "2025-03-30/2025-10-25"}) {
		t.Errorf("deleted %v", del)
	}
}

// genFields returns the SCHD_GEN fields a Decision sets for day, or nil.
func genFields(t *testing.T, d pipeline.Decision, day string) []byte {
	t.Helper()
	for _, r := range d.Ref {
		if r.Type == SchdGenType && r.Record.Key == day {
			return r.Record.Fields
		}
	}
	return nil
}

// TestSchdGenIsTheDaysBoard: the generation digests every flight of the day after the
// snapshot, not the message's work set, so a code-share master outside the window (loaded
// only to keep its CSFL) does not make a re-sent snapshot step the version, nor do two
// snapshots covering different parts of one day re-sent in turn.
func TestSchdGenIsTheDaysBoard(t *testing.T) {
	t.Run("master outside the window", testSchdGenMaster)
	t.Run("two windows of one day", testSchdGenTwoWindows)
}

func testSchdGenMaster(t *testing.T) {
	v := &memView{flights: map[int64][]byte{}, refs: map[string][]string{}, now: testNow}
	v.apply(decide(t, v, decodeRaw(t, []byte(schdMsg("ADFT", fltr(10, "CA0010", "D", "15MAR260830"))))))
	codeShare := strings.Replace(fltr(11, "MU0011", "D", "15MAR261000"), "</FLTR>", "<MAID>10</MAID></FLTR>", 1)
	snap := schdMsg("DNLD", codeShare, fltr(12, "CA0012", "A", "15MAR261100"))
	first := decide(t, v, decodeRaw(t, []byte(snap)))
	v.apply(first)
	if r := v.record(t, 10); !slices.Equal(r.CSFL, []string{"MU0011"}) {
		t.Fatalf("master CSFL %v", r.CSFL)
	}
	again := decide(t, v, decodeRaw(t, []byte(strings.Replace(snap, "<SEQN>2</SEQN>", "<SEQN>3</SEQN>", 1))))
	f1, f2 := genFields(t, first, "2026-03-15"), genFields(t, again, "2026-03-15")
	if f1 == nil || !bytes.Equal(f1, f2) || len(again.Flights) != 0 {
		t.Fatalf("same snapshot twice: generation fields\n%s\n%s\n(%d writes on the second)", f1, f2, len(again.Flights))
	}
	if !strings.Contains(string(f1), `"flights":3`) {
		t.Errorf("generation fields %s: want the day's 3 flights (the master too)", f1)
	}
}

// testSchdGenTwoWindows: two snapshots of different windows of one day, each re-sent in turn.
func testSchdGenTwoWindows(t *testing.T) {
	v := &memView{flights: map[int64][]byte{}, refs: map[string][]string{}, now: testNow}
	morning := schdMsg("DNLD", fltr(21, "CA0021", "D", "15MAR260900"), fltr(22, "CA0022", "D", "15MAR261000"))
	evening := schdMsg("DNLD", fltr(31, "CA0031", "A", "15MAR261800"), fltr(32, "CA0032", "A", "15MAR261900"))
	var fields [][]byte
	for _, m := range []string{morning, evening, morning, evening} {
		d := decide(t, v, decodeRaw(t, []byte(m)))
		v.apply(d)
		fields = append(fields, genFields(t, d, "2026-03-15"))
	}
	for i := 2; i < 4; i++ {
		if !bytes.Equal(fields[i], fields[1]) {
			t.Errorf("snapshot %d: generation fields %s, want %s (the board did not change)", i+1, fields[i], fields[1])
		}
	}
	if bytes.Equal(fields[0], fields[1]) {
		t.Errorf("the evening snapshot added flights but kept the generation fields %s", fields[0])
	}
}

// TestFlopPsdtKeepsPushAndTractor: a FLOP PSDT that repeats the stored allocation keeps the
// push (PSHT) and tractor (TIPT) data of its rows and so changes nothing.
func TestFlopPsdtKeepsPushAndTractor(t *testing.T) {
	v := baseView(t)
	for _, f := range []string{"psdt", "psht", "tipt"} {
		v.apply(decide(t, v, decodeFile(t, "../../testdata/flop/"+f+".xml")))
	}
	r := v.record(t, 7001)
	if len(r.PSDT) != 1 || r.PSDT[0].PSTM == nil || r.PSDT[0].PSID != "IN" || r.PSDT[0].TRTM == nil {
		t.Fatalf("PSDT after PSHT and TIPT: %+v", r.PSDT)
	}
	if d := decide(t, v, decodeFile(t, "../../testdata/flop/psdt.xml")); !d.Empty() {
		t.Fatalf("the same PSDT again: %d writes, %d events", len(d.Flights), len(d.Events))
	}
	// A PSDT that moves row 1 to another stand drops the push data of the old stand.
	moved := decodeRaw(t, flopMsg("PSDT", `<FLOP><FLID>7001</FLID><FFID>X</FFID><PSDT PSNO="1"><PSST>214</PSST></PSDT></FLOP>`))
	v.apply(decide(t, v, moved))
	if r := v.record(t, 7001); len(r.PSDT) != 1 || r.PSDT[0].PSTM != nil || r.PSDT[0].PSID != "" || r.PSDT[0].TRTM != nil {
		t.Errorf("PSDT on another stand: %+v", r.PSDT)
	}
}

// TestSchdOtherStypUpserts: any SCHD STYP without a handler of its own reaches the SCHD
// fallback and upserts without deleting; other TYPEs get no fallback.
func TestSchdOtherStypUpserts(t *testing.T) {
	r := Default(Options{})
	for _, tag := range []string{"SCHD-UPDT", "SCHD-ADD", "SCHD-UPD"} {
		if _, ok := r.Lookup(tag); !ok {
			t.Errorf("no handler for %s", tag)
		}
	}
	for _, tag := range []string{"FLOP-ESTT", "ZZZZ-ADD", "SCHD", "FLOP"} {
		if _, ok := r.Lookup(tag); ok {
			t.Errorf("%s has a handler", tag)
		}
	}
	v := baseView(t)
	before := v.ids()
	d := decide(t, v, decodeRaw(t, []byte(schdMsg("UPDT", fltr(8101, "CA8101", "D", "15MAR261000"), strings.Replace(fltr(7004, "CA4104", "A", "15MAR260930"), "320", "333", 1)))))
	v.apply(d)
	for _, w := range d.Flights {
		if w.Delete {
			t.Errorf("SCHD-UPDT deleted %d", w.FLID)
		}
	}
	if got := v.ids(); !slices.Equal(got, append(slices.Clone(before), 8101)) {
		t.Fatalf("flights after SCHD-UPDT %v, want %v and 8101", got, before)
	}
	if r := v.record(t, 7004); r.ACFT != "333" {
		t.Errorf("7004 ACFT %q after SCHD-UPDT, want 333", r.ACFT)
	}
	if len(d.Ref) != 0 {
		t.Errorf("SCHD-UPDT set generations: %+v", d.Ref)
	}
}

// TestSnapshotNeverDeletesForAPastFltr: a FLTR before today is ignored, and its flight is not
// deleted by the window replace even when the stored copy lies inside the window.
func TestSnapshotNeverDeletesForAPastFltr(t *testing.T) {
	v := &memView{flights: map[int64][]byte{}, refs: map[string][]string{}, now: testNow}
	v.apply(decide(t, v, decodeRaw(t, []byte(schdMsg("ADFT", fltr(41, "CA0041", "D", "16MAR261000"))))))
	stored := v.flights[41]
	d := decide(t, v, decodeRaw(t, []byte(schdMsg("DNLD", fltr(41, "CA0041", "D", "14MAR261000"), fltr(42, "CA0042", "A", "17MAR261200")))))
	for _, w := range d.Flights {
		if w.FLID == 41 {
			t.Fatalf("flight 41 written (delete %v) by a snapshot naming it with a past SODT", w.Delete)
		}
	}
	v.apply(d)
	if !bytes.Equal(v.flights[41], stored) {
		t.Errorf("flight 41 changed: %s", v.flights[41])
	}
	if _, ok := v.flights[42]; !ok {
		t.Error("flight 42 not inserted")
	}
}

// TestSchsKeepsTheSeasonBeforeTheNewOne: the season kept besides the new one is the
// latest-starting one that starts before it, not a later-starting one.
func TestSchsKeepsTheSeasonBeforeTheNewOne(t *testing.T) {
	v := baseView(t)
	p, b := "2026-10-01/2026-12-31", "2027-03-28/2027-10-30"
	v.refs[SeasonType] = []string{p, b}
	msg := `<?xml version="1.0" encoding="UTF-8"?><MSG><META><SNDR>AODB</SNDR><SEQN>5</SEQN><DTTM>20260315080000</DTTM>` +
		`<TYPE>SCHS</TYPE><STYP>DNLD</STYP></META><SCHS><SNAM>Winter</SNAM><APCD>CTU</APCD><SDAT>25OCT26</SDAT><EDAT>27MAR27</EDAT>` +
		`<RECS>1</RECS><FLTR><ALCD>CA</ALCD><FLNO>CA1201</FLNO><MVIN>D</MVIN><STDT>25OCT26</STDT><EDDT>27MAR27</EDDT>` +
		`<DYOP>1234567</DYOP><SCHT>1000</SCHT><FLTY>W</FLTY><FLIN>D</FLIN><ACFT>320</ACFT></FLTR></SCHS></MSG>`
	d := decide(t, v, decodeRaw(t, []byte(msg)))
	var up, del []string
	for _, r := range d.Ref {
		if r.Op == pipeline.RefDelete {
			del = append(del, r.Record.Key)
		} else {
			up = append(up, r.Record.Key)
		}
	}
	if !slices.Equal(up, []string{"2026-10-25/2027-03-27"}) || !slices.Equal(del, []string{b}) {
		t.Fatalf("upserts %v, deletes %v; want the new season upserted, %s kept, %s deleted", up, del, p, b)
	}
}
