package shadow

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"msgx/internal/testkit"
)

var shanghai = func() *time.Location {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		panic(err)
	}
	return loc
}()

// read reads a capture under testdata/shadow, with lines changed by edit (old → new) first.
func read(t *testing.T, name string, edit ...string) []Note {
	t.Helper()
	b, err := os.ReadFile("../../testdata/shadow/" + name)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(edit); i += 2 {
		if !bytes.Contains(b, []byte(edit[i])) {
			t.Fatalf("%s has no %q", name, edit[i])
		}
		b = bytes.Replace(b, []byte(edit[i]), []byte(edit[i+1]), 1)
	}
	notes, err := ReadLines(bytes.NewReader(b), shanghai)
	if err != nil {
		t.Fatal(err)
	}
	return notes
}

func report(r Report) string {
	var b strings.Builder
	r.Write(&b)
	return b.String()
}

// TestLegacyCaptureEqualsMsgx: testdata/shadow/legacy.jsonl is what the legacy publishes for
// a snapshot and a few FLOPs (written from docs/sis-format.md §3.8, with Jackson's class names, row
// ids and its bugs), msgx.jsonl what msgx's legacy format publishes for the same messages.
// They are equal, and every rule was needed to say so.
func TestLegacyCaptureEqualsMsgx(t *testing.T) {
	rep := Compare(read(t, "legacy.jsonl"), read(t, "msgx.jsonl"), Options{})
	out := report(rep)
	if !rep.Equal() {
		t.Fatalf("not equal:\n%s", out)
	}
	for _, r := range rep.Rules {
		if r.Applied == 0 {
			t.Errorf("rule %s was never needed: the capture does not exercise it\n%s", r.ID, out)
		}
	}
	if !strings.Contains(out, "result: EQUAL") || !strings.Contains(out, "flight 7001: match (approvedTime, ctotCode, fieldAgent, passengerAgent, portOpenTime, schedule)") {
		t.Errorf("report:\n%s", out)
	}
	if rep.RowIDsMapped != 2 {
		t.Errorf("row ids mapped %d, want 2", rep.RowIDsMapped)
	}
}

// TestOneChangedFieldIsReported: msgx sending another CTOT is the one difference.
func TestOneChangedFieldIsReported(t *testing.T) {
	msgx := read(t, "msgx.jsonl", `"ctotCode":1773636000000`, `"ctotCode":1773636300000`)
	rep := Compare(read(t, "legacy.jsonl"), msgx, Options{})
	out := report(rep)
	if rep.Equal() || rep.Differences() != 1 {
		t.Fatalf("want one difference:\n%s", out)
	}
	if !strings.Contains(out, "MISMATCH ctotCode: legacy \"2026-03-16T04:40:00Z\", msgx \"2026-03-16T04:45:00Z\"") {
		t.Errorf("report:\n%s", out)
	}
}

func TestWhatOnlyOneSideProduced(t *testing.T) {
	// msgx did not publish the gates of 7002, and published a remark the legacy did not.
	msgx := read(t, "msgx.jsonl",
		`{"gates":[{"GATE":"B14","GTNO":1,"PGCT":1773634500000,"PGOT":1773632400000}]}`, `{"remarksCode":"x"}`)
	rep := Compare(read(t, "legacy.jsonl"), msgx, Options{})
	out := report(rep)
	if rep.Differences() != 2 || !strings.Contains(out, "ONLY LEGACY gates") || !strings.Contains(out, "ONLY MSGX remarksCode \"x\"") {
		t.Errorf("report:\n%s", out)
	}
	// A delete msgx published without a snapshot beside it is a difference.
	rep = Compare(nil, []Note{{Type: "delete", FlightID: ptr(7003)}}, Options{})
	if rep.Differences() != 1 {
		t.Errorf("a lone msgx delete: %s", report(rep))
	}
}

func TestRowIDThatMatchesSeveralFlights(t *testing.T) {
	legacy := []Note{{Line: 1, Type: "update", FlightID: ptr(501), Fields: map[string]any{"approvedTime": time.Unix(100, 0).UTC()}}}
	msgx := []Note{
		{Type: "update", FlightID: ptr(7001), Fields: map[string]any{"approvedTime": time.Unix(100, 0).UTC()}},
		{Type: "update", FlightID: ptr(7002), Fields: map[string]any{"approvedTime": time.Unix(100, 0).UTC()}},
	}
	// One legacy APPT, two msgx APPTs with its value: which flight it was cannot be told, so
	// the result is undecided, not a difference and not equal.
	rep := Compare(legacy, msgx, Options{})
	out := report(rep)
	if len(rep.Ambiguous) != 1 || rep.Ambiguous[0].Row != 501 || rep.Verdict() != "UNDECIDED" || rep.Equal() || rep.Differences() != 0 ||
		!strings.Contains(out, "AMBIGUOUS legacy line 1: APPT approvedTime with row id 501 as flightId could be msgx flight [7001 7002]") ||
		!strings.Contains(out, "result: UNDECIDED") {
		t.Fatalf("report:\n%s", out)
	}
	// With the legacy database's mapping, 501 is 7001, and only 7002 differs.
	rep = Compare(legacy, msgx, Options{RowIDs: map[int64]int64{501: 7001}})
	if len(rep.Unresolved) != 0 || rep.Differences() != 1 || !strings.Contains(report(rep), "flight 7002: 1 difference") {
		t.Errorf("report:\n%s", report(rep))
	}
}

func appt(line int, flightID int64, at int64) Note {
	return Note{Line: line, Type: "update", FlightID: ptr(flightID), Fields: map[string]any{"approvedTime": time.Unix(at, 0).UTC()}}
}

func botm(line int, flightID int64, at int64) Note {
	return Note{Line: line, Type: "update", FlightID: ptr(flightID), Fields: map[string]any{"boardingTime": time.Unix(at, 0).UTC()}}
}

// TestIdenticalCapturesWhereFlightsShareAValue: two flights given the same APPT and the same
// BOTM (both STYPs whose legacy flightId is a row id). A capture compared with itself is
// equal: the order of changes places each notification, not the value the flights share.
func TestIdenticalCapturesWhereFlightsShareAValue(t *testing.T) {
	capture := []Note{appt(1, 7001, 100), appt(2, 7002, 100), botm(3, 7001, 200), botm(4, 7002, 200)}
	rep := Compare(capture, capture, Options{})
	if out := report(rep); !rep.Equal() || rep.Verdict() != "EQUAL" || rep.RowIDsMapped != 0 ||
		!strings.Contains(out, "flight 7001: match (approvedTime, boardingTime)") || !strings.Contains(out, "result: EQUAL: 2 flights match") {
		t.Fatalf("report:\n%s", out)
	}
	// msgx giving 7002 another BOTM is the one difference, on 7002.
	msgx := []Note{appt(1, 7001, 100), appt(2, 7002, 100), botm(3, 7001, 200), botm(4, 7002, 260)}
	rep = Compare(capture, msgx, Options{})
	if out := report(rep); rep.Differences() != 1 || len(rep.Ambiguous) != 0 ||
		!strings.Contains(out, "flight 7002: 1 difference(s); match (approvedTime)") || !strings.Contains(out, `MISMATCH boardingTime: legacy "1970-01-01T00:03:20Z", msgx "1970-01-01T00:04:20Z"`) {
		t.Fatalf("report:\n%s", out)
	}
}

// TestRowIDsPlacedByTheOrderOfChanges: the legacy's row ids 501 and 502 are flights 7001 and
// 7002 in the order both sides published them; a later BOTM of row 502 that only 7002 has
// tells the same, and the legacy's other BOTM value is reported on 7002.
func TestRowIDsPlacedByTheOrderOfChanges(t *testing.T) {
	legacy := []Note{appt(1, 501, 100), appt(2, 502, 100), botm(3, 502, 300)}
	msgx := []Note{appt(1, 7001, 100), appt(2, 7002, 100), botm(3, 7002, 300)}
	rep := Compare(legacy, msgx, Options{})
	if out := report(rep); !rep.Equal() || rep.RowIDsMapped != 3 || !strings.Contains(out, "flight 7002: match (approvedTime, boardingTime); explained by row-id") {
		t.Fatalf("report:\n%s", out)
	}
	legacy[2] = botm(3, 502, 360)
	rep = Compare(legacy, msgx, Options{})
	if out := report(rep); rep.Differences() != 1 || !strings.Contains(out, `MISMATCH boardingTime: legacy "1970-01-01T00:06:00Z", msgx "1970-01-01T00:05:00Z"`) {
		t.Fatalf("report:\n%s", out)
	}
	// A row whose notifications point at two flights cannot be placed.
	legacy = []Note{appt(1, 501, 100), appt(2, 502, 100), botm(3, 501, 300)}
	rep = Compare(legacy, msgx, Options{})
	if out := report(rep); rep.Verdict() != "UNDECIDED" || !strings.Contains(out, "its notifications match different msgx flights [7001 7002]") {
		t.Fatalf("report:\n%s", out)
	}
}

func TestParseUnwrapsJacksonAndReadsTimes(t *testing.T) {
	n, err := Parse([]byte(`{"@class":"a.b.C","type":"update","flightId":["java.lang.Long",7001],"updatedFields":{"@class":"java.util.HashMap","boardingTime":"2026-03-16 09:50:00","stands":["java.util.ArrayList",[{"@class":"a.b.Stand","STST":"2026-03-16T01:05:00Z"}]]}}`), shanghai)
	if err != nil {
		t.Fatal(err)
	}
	if *n.FlightID != 7001 {
		t.Errorf("flightId %v", n.FlightID)
	}
	if bt, ok := n.Fields["boardingTime"].(time.Time); !ok || !bt.Equal(time.Date(2026, 3, 16, 1, 50, 0, 0, time.UTC)) {
		t.Errorf("boardingTime %v", n.Fields["boardingTime"])
	}
	st := n.Fields["stands"].([]any)[0].(map[string]any)
	if _, class := st["@class"]; class || !st["STST"].(time.Time).Equal(time.Date(2026, 3, 16, 1, 5, 0, 0, time.UTC)) {
		t.Errorf("stand %v", st)
	}
	if n, err := Parse([]byte("null"), shanghai); err != nil || !n.Null {
		t.Errorf("null: %+v %v", n, err)
	}
	for _, bad := range []string{`{"type":"insert"}`, `[1,2,3]`, `{`} {
		if _, err := Parse([]byte(bad), shanghai); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestSubscribeReadsTheChannel(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", DialTimeout: time.Second})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	testkit.RequireService(t, "Redis at 127.0.0.1:6379 (start redis-server to run this test)", rdb.Ping(ctx).Err())
	channel := fmt.Sprintf("msgx:test:%s:%d:FLOP", t.Name(), time.Now().UnixNano())
	lines, _ := os.ReadFile("../../testdata/shadow/legacy.jsonl")
	want := strings.Split(strings.TrimSpace(string(lines)), "\n")
	sctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	got := make(chan []Note, 1)
	errs := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		notes, err := Subscribe(sctx, rdb, channel, shanghai, len(want), func() { close(ready) })
		got <- notes
		errs <- err
	}()
	<-ready
	for _, l := range want {
		if err := rdb.Publish(context.Background(), channel, l).Err(); err != nil {
			t.Fatal(err)
		}
	}
	notes := <-got
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if len(notes) != len(want) {
		t.Fatalf("read %d notifications, want %d", len(notes), len(want))
	}
	file := read(t, "legacy.jsonl")
	if a, b := Compare(notes, read(t, "msgx.jsonl"), Options{}), Compare(file, read(t, "msgx.jsonl"), Options{}); a.Equal() != b.Equal() || a.Differences() != b.Differences() {
		t.Errorf("the channel and the file compare differently:\n%s\n%s", report(a), report(b))
	}
}

func ptr(n int64) *int64 { return &n }
