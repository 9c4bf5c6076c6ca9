package pump_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// Boards answers a day's board as of any time equal to the live board the flight store held
// then, whichever way it gets there: the first board of the day (the whole fold), a later time
// (only the messages since the kept fold: extension), an earlier time (the kept copy of the
// flights before it, every 200 messages, and the messages after the copy), after a snapshot
// that replaces its window and an FDEL. A time before the first message is refused.
func TestBoardsAsOfEqualTheLiveBoardsOfThen(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e, fs := batchEnv(t, db, defaultPolicy, nil, true, nil)
		ctx := context.Background()
		const day = "2026-12-01"
		drain := func(ids []int64) {
			t.Helper()
			for steps := 0; steps < 100 && e.msg(ids[len(ids)-1]).State == pipeline.Pending; steps++ {
				e.step()
			}
			for _, id := range ids {
				e.want(id, pipeline.Succeeded, "")
			}
		}
		live := func() []any {
			t.Helper()
			es, err := fs.Day(ctx, day)
			if err != nil {
				t.Fatal(err)
			}
			out := []any{}
			for _, x := range es {
				var r any
				json.Unmarshal(x.Record, &r)
				out = append(out, r)
			}
			return out
		}
		var marks []time.Time
		var boards [][]any
		mark := func() {
			marks = append(marks, e.clock.Now())
			boards = append(boards, live())
			e.clock.Add(time.Minute)
		}
		start := e.clock.Now()
		e.clock.Add(time.Minute)
		drain(e.post(schd("1", "DNLD", flightRec(5001, "CA1501", "01DEC261300"), flightRec(5002, "CA1502", "01DEC261400"), flightRec(5003, "CA1503", "01DEC261500"))))
		mark()
		seqn := 100
		flops := func(n int, flid int64) {
			var raws []string
			for i := range n {
				seqn++
				raws = append(raws, flop(fmt.Sprint(seqn), "STND", fmt.Sprintf(`<FLOP><FLID>%d</FLID><FFID>X</FFID><STND>%d</STND></FLOP>`, flid, 100+i%50)))
			}
			drain(e.post(raws...))
		}
		flops(150, 5001)
		mark()
		flops(150, 5002)
		mark()
		// The snapshot replaces 13:00–15:00 without CA1502: deleted; then an FDEL of CA1503.
		drain(e.post(schd("2", "DNLD", flightRec(5001, "CA1501", "01DEC261300"), flightRec(5003, "CA1503", "01DEC261500"))))
		mark()
		flops(150, 5001)
		drain(e.post(flop("900", "FDEL", `<FLOP><FLID>5003</FLID><FFID>X</FFID><FDEL/></FLOP>`)))
		mark()
		e.clock.Add(5 * time.Minute)

		b := pump.NewBoards(e.pump, db.Flights)
		check := func(i int, how string) {
			t.Helper()
			got, err := b.At(ctx, day, marks[i])
			if err != nil {
				t.Fatalf("%s: board at mark %d: %v", how, i, err)
			}
			recs := []any{}
			for _, f := range got.Flights {
				var r any
				json.Unmarshal(f.Record, &r)
				recs = append(recs, r)
			}
			if !reflect.DeepEqual(recs, boards[i]) || len(got.Warnings) > 0 {
				t.Fatalf("%s: board at mark %d (%d messages, warnings %q):\n%v\nwant the live board then:\n%v", how, i, got.Messages, got.Warnings, recs, boards[i])
			}
		}
		check(1, "the first board")
		check(3, "a later time, extending the kept fold")
		check(4, "a later time again")
		for _, i := range []int{2, 0, 3, 1} {
			check(i, "an earlier time, from a kept copy")
		}
		if len(boards[4]) != 1 || len(boards[3]) != 2 || len(boards[2]) != 3 {
			t.Fatalf("the live boards: %d, %d, %d flights; want the snapshot and the FDEL to have deleted one each", len(boards[2]), len(boards[3]), len(boards[4]))
		}
		var before *pump.BeforeHistoryError
		if _, err := b.At(ctx, day, start); !errors.As(err, &before) {
			t.Fatalf("a time before the first message: %v, want a BeforeHistoryError", err)
		}
	})
}
