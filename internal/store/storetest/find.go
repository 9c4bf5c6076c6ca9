package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// findCases are the contract of find.go: the bounded search of message bodies.
var findCases = []struct {
	name string
	fn   func(t *testing.T, db Store)
}{
	{"BodySearchReadsTheNewestBodiesOnly", bodySearchReadsTheNewest},
	{"TextFilterSearchesBodiesWhenAsked", textFilterSearchesBodies},
}

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

func bodySearchReadsTheNewest(t *testing.T, db Store) {
	ctx := context.Background()
	ids, err := db.InsertMessages(ctx, findBodies, opNow)
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
		got, err := db.SearchBodies(ctx, c.text, c.within, c.limit)
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
	if n, err := db.Archive(ctx, ids[len(ids)-1], opNow.Add(48*time.Hour), opNow.Add(48*time.Hour), nil); err != nil || n != len(ids) {
		t.Fatalf("archive: %d %v", n, err)
	}
	got, err := db.SearchBodies(ctx, "MU5101", 0, 0)
	if err != nil || !sameIDs(bodyIDs(got.Messages), ids[2:3]) {
		t.Errorf("archived body: %v %v", bodyIDs(got.Messages), err)
	}
}

func textFilterSearchesBodies(t *testing.T, db Store) {
	ctx := context.Background()
	ids, err := db.InsertMessages(ctx, findBodies, opNow)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Record(ctx, ids[4], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, Attempts: 1, LastError: "no flight CA8241 stored",
		TypeTag: "FLOP-CHOT"}, opNow); err != nil {
		t.Fatal(err)
	}
	search := func(q store.MessageQuery) []int64 {
		t.Helper()
		ms, err := db.SearchMessages(ctx, q)
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
