package pump

import (
	"context"
	"testing"
	"time"

	"msgx/internal/handler"
	"msgx/internal/simulate"
	"msgx/internal/sis"
	"msgx/internal/store"
)

// BenchmarkFoldDay folds a simulated 1,000-flight day (its schedule and every FLOP, decoded
// once) in memory with the handlers, as Boards.At does after reading and decoding: the cost
// of the fold itself, without the database.
func BenchmarkFoldDay(b *testing.B) {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		b.Fatal(err)
	}
	day := time.Date(2026, 12, 7, 0, 0, 0, 0, loc)
	s, err := simulate.Generate(simulate.Options{Flights: 1000, Day: day, Loc: loc, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	var msgs []*sis.Message
	for _, m := range s.Messages {
		msg, err := sis.Decode(m.Body, sis.Options{Location: loc})
		if err == nil && (msg.Meta.TYPE == "SCHD" || msg.Meta.TYPE == "FLOP") {
			msgs = append(msgs, msg)
		}
	}
	reg := handler.Default(handler.Options{})
	now := day.Add(-2 * time.Hour)
	b.ResetTimer()
	for range b.N {
		mem := newMemView(loc)
		for i, msg := range msgs {
			h, _ := reg.Lookup(msg.Tag())
			mem.now = now
			d, err := decideSafely(context.Background(), h, mem, msg)
			if err != nil {
				continue
			}
			mem.apply(d, store.Applied{ID: int64(i + 1), At: now})
		}
		if n := len(mem.flights); n < 900 {
			b.Fatalf("%d flights folded", n)
		}
	}
	b.ReportMetric(float64(len(msgs)), "messages")
}
