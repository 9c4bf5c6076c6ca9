package pump_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// dueSpy records the pump's due reads: the query and, per message read, whether its text
// came with it.
type dueSpy struct {
	pump.Store
	mu    sync.Mutex
	reads []string
	ahead chan struct{} // a read ahead (After set) is done
}

func (s *dueSpy) Due(ctx context.Context, q store.DueQuery) ([]*store.Due, error) {
	due, err := s.Store.Due(ctx, q)
	read := fmt.Sprintf("after %d known (%d,%d]:", q.After, q.KnownFrom, q.KnownTo)
	for _, m := range due {
		read += fmt.Sprintf(" %d/%v", m.ID, m.Raw != "")
	}
	s.mu.Lock()
	s.reads = append(s.reads, read)
	s.mu.Unlock()
	if q.After > 0 {
		s.ahead <- struct{}{}
	}
	return due, err
}

// While a full batch is in its transaction the pump reads and decodes the next one; the next
// step's due read still says what is due, without the texts decoded ahead. A message that
// turned FAILED in between heads the next step alone, decoded ahead all the same, and the
// messages after it keep their order.
func TestTheNextBatchIsDecodedAhead(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e, _ := batchEnv(t, db, defaultPolicy, nil, true, nil)
		spy := &dueSpy{Store: db, ahead: make(chan struct{}, 10)}
		e.pump = pump.New(spy, handler.Default(handler.Options{}), pump.Options{Policy: defaultPolicy, Clock: e.clock,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), BatchSize: 2, ReadAhead: true})
		var raws []string
		for i := range 7 {
			raws = append(raws, refMsg("STTS", "ADD", fmt.Sprint(i+1), stts(fmt.Sprintf("S%d", i), "s"), 1))
		}
		ids := e.post(raws...)
		e.step() // 0 and 1; 2 and 3 read ahead
		e.step() // 2 and 3, decoded ahead; 4 and 5 read ahead
		<-spy.ahead
		<-spy.ahead
		// 4 fails before its turn (as if its last attempt had failed): the due read says so.
		if err := db.Record(context.Background(), ids[4], store.Outcome{State: pipeline.Failed, Class: pipeline.Infra,
			Attempts: 1, LastError: "down"}, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		e.drain()
		for _, id := range ids {
			e.want(id, pipeline.Succeeded, "")
		}
		n := func(i int) int64 { return ids[i] }
		want := []string{
			fmt.Sprintf("after 0 known (0,0]: %d/true %d/true", n(0), n(1)),
			fmt.Sprintf("after %d known (0,0]: %d/true %d/true", n(1), n(2), n(3)),
			fmt.Sprintf("after 0 known (%d,%d]: %d/false %d/false", n(1), n(3), n(2), n(3)),
			fmt.Sprintf("after %d known (0,0]: %d/true %d/true", n(3), n(4), n(5)),
			fmt.Sprintf("after 0 known (%d,%d]: %d/false %d/false", n(3), n(5), n(4), n(5)),
		}
		spy.mu.Lock()
		defer spy.mu.Unlock()
		if len(spy.reads) < len(want) {
			t.Fatalf("due reads:\n%q\nwant first\n%q", spy.reads, want)
		}
		for i, w := range want {
			if spy.reads[i] != w {
				t.Fatalf("due read %d:\n got %s\nwant %s\nall: %q", i, spy.reads[i], w, spy.reads)
			}
		}
	})
}
