package storetest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// findBodies are message bodies with edge values: a flight number in ASCII, CJK and 4-byte
// text, LIKE's own characters, and a body as long as a large schedule.
var findBodies = []string{
	`<MSG><FLNO>CA8241</FLNO></MSG>`,
	`<MSG><REMC>登机口 变更 🛫 CA8241</REMC></MSG>`,
	`<MSG><FLNO>MU5101</FLNO><REMC>100%_off</REMC></MSG>`,
	`<MSG>` + strings.Repeat("<X>padding</X>", 20000) + `<FLNO>ca8241</FLNO></MSG>`,
	`<MSG><FLNO>CA8242</FLNO></MSG>`,
}

func bodyIDs(ms []*store.Message) []int64 {
	out := []int64{}
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func sameIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func bodySearchReadsTheNewest(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ids, err := db.Intake.InsertMessages(ctx, findBodies, opNow)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		text          string
		within, limit int
		want          []int64
		more          bool
	}{
		{"CA8241", 0, 0, []int64{ids[3], ids[1], ids[0]}, false}, // newest first, ASCII case ignored
		{"CA8241", 2, 0, []int64{ids[3]}, false},                 // the newest 2 only
		{"CA8241", 1, 0, nil, false},
		{"CA8241", 0, 2, []int64{ids[3], ids[1]}, true},
		{"变更 🛫", 0, 0, []int64{ids[1]}, false},
		{"100%_", 0, 0, []int64{ids[2]}, false}, // % and _ are text, not patterns
		{"%", 0, 0, []int64{ids[2]}, false},
		{"CA9999", 0, 0, nil, false},
		{"", 0, 0, nil, false},
	}
	for _, c := range cases {
		got, err := db.Operations.SearchBodies(ctx, c.text, c.within, c.limit)
		if err != nil {
			t.Fatalf("%q within %d: %v", c.text, c.within, err)
		}
		if !sameIDs(bodyIDs(got.Messages), append([]int64{}, c.want...)) || got.More != c.more {
			t.Errorf("%q within %d limit %d: %v more=%v, want %v more=%v", c.text, c.within, c.limit, bodyIDs(got.Messages), got.More, c.want, c.more)
		}
		if want := max(c.within, 0); want > 0 && got.Scanned != want {
			t.Errorf("%q within %d: scanned %d", c.text, c.within, got.Scanned)
		}
	}
	// An archived body is searched too.
	for _, id := range ids {
		succeedWithEvents(t, db, id, "FLOP-STND")
	}
	if n, err := db.Archiver.Archive(ctx, ids[len(ids)-1], opNow.Add(48*time.Hour), opNow.Add(48*time.Hour), nil); err != nil || n != len(ids) {
		t.Fatalf("archive: %d %v", n, err)
	}
	got, err := db.Operations.SearchBodies(ctx, "MU5101", 0, 0)
	if err != nil || !sameIDs(bodyIDs(got.Messages), ids[2:3]) {
		t.Errorf("archived body: %v %v", bodyIDs(got.Messages), err)
	}
}

func textFilterSearchesBodies(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ids, err := db.Intake.InsertMessages(ctx, findBodies, opNow)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Processor.Record(ctx, ids[4], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, Attempts: 1, LastError: "no flight CA8241 stored",
		TypeTag: "FLOP-CHOT"}, opNow); err != nil {
		t.Fatal(err)
	}
	search := func(q store.MessageQuery) []int64 {
		t.Helper()
		ms, err := db.Operations.SearchMessages(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return bodyIDs(ms)
	}
	if got := search(store.MessageQuery{Text: "CA8241"}); !sameIDs(got, ids[4:]) {
		t.Errorf("text without bodies: %v, want only the error's %v", got, ids[4:])
	}
	if got := search(store.MessageQuery{Text: "CA8241", BodyWithin: 100}); !sameIDs(got, []int64{ids[0], ids[1], ids[3], ids[4]}) {
		t.Errorf("text with bodies: %v", got)
	}
	if got := search(store.MessageQuery{Text: "CA8241", BodyWithin: 3}); !sameIDs(got, []int64{ids[3], ids[4]}) {
		t.Errorf("text with the newest 3 bodies: %v", got)
	}
	if got := search(store.MessageQuery{Text: "CA8241", BodyWithin: 100, State: pipeline.Pending}); !sameIDs(got, []int64{ids[0], ids[1], ids[3]}) {
		t.Errorf("text with bodies, PENDING: %v", got)
	}
}

// messagesOfFlightsNewestFirst: the messages that named any of a set of flights, whatever
// their outcome, newest first and each once, with the edge FLIDs (0, negative, the largest,
// repeated, more than a search takes) and a message archived to CMINMSGS_HST.
func messagesOfFlightsNewestFirst(t *testing.T, db *store.DB) {
	ctx := context.Background()
	const a, b = 71001, 71002
	big := int64(math.MaxInt64)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<schd/>", "<flop-a/>", "<orphan-b/>", "<other/>", "<flop-big/>", "<flop-b/>"}, opNow)
	if err != nil {
		t.Fatal(err)
	}
	pending := store.Version{State: pipeline.Pending}
	succeed := func(id int64, tag string, flids ...int64) {
		t.Helper()
		if _, _, err := db.Processor.Succeed(ctx, id, store.Success{From: pending, TypeTag: tag, Identity: fmt.Sprintf("AODB|%s|%d", tag, id), Flights: flids}, nil, opNow); err != nil {
			t.Fatal(err)
		}
	}
	succeed(ids[0], "SCHD-DNLD", a, b, 71003) // a schedule naming both flights and another
	succeed(ids[1], "FLOP-STND", a)
	if err := db.Processor.Record(ctx, ids[2], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, Attempts: 1, LastError: "flight 71002 not stored; parked",
		TypeTag: "FLOP-CHOT", From: pending, Flights: []int64{b}}, opNow); err != nil {
		t.Fatal(err)
	}
	succeed(ids[3], "FLOP-STND", 71009)
	succeed(ids[4], "FLOP-REMC", big)
	succeed(ids[5], "FLOP-GTDT", b)
	// The schedule archived: its body in CMINMSGS_HST, still found.
	if _, err := db.Archiver.Archive(ctx, ids[0], opNow.Add(time.Hour), opNow.Add(2*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	ofFlights := func(flids []int64, limit int) ([]int64, bool) {
		t.Helper()
		got, err := db.Flights.MessagesOfFlights(ctx, flids, limit)
		if err != nil {
			t.Fatalf("flights %v: %v", flids, err)
		}
		return bodyIDs(got.Messages), got.More
	}
	for _, c := range []struct {
		name  string
		flids []int64
		limit int
		want  []int64
		more  bool
	}{
		{"both flights, newest first, the schedule once", []int64{a, b}, 0, []int64{ids[5], ids[2], ids[1], ids[0]}, false},
		{"repeated FLIDs count once", []int64{b, b, a, b}, 0, []int64{ids[5], ids[2], ids[1], ids[0]}, false},
		{"one flight, its parked ORPHAN too", []int64{b}, 0, []int64{ids[5], ids[2], ids[0]}, false},
		{"limited", []int64{a, b}, 2, []int64{ids[5], ids[2]}, true},
		{"the largest FLID", []int64{big}, 0, []int64{ids[4]}, false},
		{"zero and negative name nothing", []int64{0, -1, math.MinInt64}, 0, nil, false},
		{"none", nil, 0, nil, false},
		{"a flight nobody named", []int64{71004}, 0, nil, false},
	} {
		got, more := ofFlights(c.flids, c.limit)
		if !sameIDs(got, append([]int64{}, c.want...)) || more != c.more {
			t.Errorf("%s: %v more=%v, want %v more=%v", c.name, got, more, c.want, c.more)
		}
	}
	if got, err := db.Flights.MessagesOfFlights(ctx, []int64{b, a, big}, 0); err != nil || !slices.Equal(got.Named[ids[0]], []int64{a, b}) ||
		!slices.Equal(got.Named[ids[5]], []int64{b}) || !slices.Equal(got.Named[ids[4]], []int64{big}) || len(got.Named) != 5 {
		t.Errorf("the flights each message named: %v %v", got.Named, err)
	}
	// As many FLIDs as a search takes, and one more.
	many := make([]int64, store.MaxFlightsSearched)
	for i := range many {
		many[i] = int64(80001 + i)
	}
	many[len(many)-1] = a
	if got, _ := ofFlights(many, 0); !sameIDs(got, []int64{ids[1], ids[0]}) {
		t.Errorf("%d flights: %v", len(many), got)
	}
	if _, err := db.Flights.MessagesOfFlights(ctx, append(many, 99999), 0); err == nil {
		t.Errorf("%d flights: no error", len(many)+1)
	}
}
