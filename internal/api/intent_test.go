package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"msgx/internal/api"
	"msgx/internal/dispatch"
	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// deliver gives target n events of one message, then marks them in order: 'S' SENT, 'D' DEAD.
func deliver(t *testing.T, db *store.DB, target, outcomes string, now time.Time) {
	t.Helper()
	ctx := context.Background()
	ids, err := db.Intake.InsertMessages(ctx, []string{"<m/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	var evs []pipeline.Event
	for range outcomes {
		evs = append(evs, pipeline.Event{Target: target, Kind: "k", Payload: []byte(`{}`)})
	}
	if _, _, err := db.Processor.Succeed(ctx, ids[0], store.Success{TypeTag: "X-Y", Identity: "i|" + target, Decision: pipeline.Decision{Events: evs}}, nil, now); err != nil {
		t.Fatal(err)
	}
	pending, err := db.Outbox.PendingEvents(ctx, target, len(outcomes))
	if err != nil || len(pending) != len(outcomes) {
		t.Fatalf("pending events of %s: %d %v", target, len(pending), err)
	}
	for i, o := range outcomes {
		err := db.Outbox.EventTx(ctx, func(tx store.EventTx) error {
			if o == 'S' {
				_, err := tx.MarkSent(target, []int64{pending[i].EventID}, now)
				return err
			}
			_, err := tx.Change([]*store.Event{&pending[i]}, store.EventChange{State: pipeline.EventDead, Class: pipeline.Rejected, LastError: "no"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Monitoring knows intent: the operators' pauses are gauges (the alert rules hold on them), a
// target whose latest deliveries all went DEAD is "rejecting" (in the status and a gauge)
// while one that delivered since is not, a known target with no event yet has its series at
// zero, and /healthz does not call a paused pump running.
func TestMetricsKnowPausesAndRejection(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	clock := testkit.NewClock(t0)
	deliver(t, db, "T", "SDDD", t0) // delivered once, then rejected three times: rejecting
	deliver(t, db, "U", "DDDS", t0) // rejected, then delivered: not rejecting
	deliver(t, db, "V", "SDD", t0)  // two rejections only: not (yet) rejecting
	if err := db.Operations.SetPause(ctx, store.PumpPause, "ops", "maintenance", t0); err != nil {
		t.Fatal(err)
	}
	if err := db.Operations.SetPause(ctx, store.TargetPause("T"), "ops", "sink upgrade", t0); err != nil {
		t.Fatal(err)
	}
	m := metrics.New(clock, "v-test", nil)
	m.Known([]string{"T", "U", "V", "Z"}, []string{"FLOP-CHOT"})
	snap, err := (&metrics.Sampler{DB: storetest.API(db), Targets: dispatch.TargetSamples(db.Outbox), Known: []string{"T", "U", "V", "Z"}, Clock: clock}).Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m.SetSnapshot(snap)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := api.New(api.Deps{DB: storetest.API(db), Clock: clock, Log: log, PumpRunning: true, Extra: []func(*http.ServeMux){api.MetricsRoute(m)},
		StatusExtra: map[string]func(context.Context) (any, error){"targets": dispatch.StatusSection(db.Outbox, clock, nil)}})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	wantLines(t, scrape(t, ts.URL),
		`msgx_pump_paused 1`,
		`msgx_target_paused{target="T"} 1`, `msgx_target_paused{target="U"} 0`, `msgx_target_paused{target="Z"} 0`,
		`msgx_target_rejecting{target="T"} 1`, `msgx_target_rejecting{target="U"} 0`, `msgx_target_rejecting{target="V"} 0`,
		`msgx_target_rejecting{target="Z"} 0`,
		`msgx_events_sent_total{target="Z"} 0`, `msgx_events_dead_total{target="Z"} 0`,
		`msgx_messages_finished_total{class="ORPHAN",state="DEAD",type_tag="FLOP-CHOT"} 0`,
		`msgx_messages_received_total{source="gateway"} 0`,
		`msgx_operator_actions_total{action="message.park"} 0`,
		`msgx_dead_letters{acknowledged="false",kind="event"} 8`, `msgx_dead_letters{acknowledged="true",kind="event"} 0`,
		`msgx_dead_letters{acknowledged="false",kind="message"} 0`)

	var st struct {
		Extra struct {
			Targets []struct {
				Target    string `json:"target"`
				Rejecting bool   `json:"rejecting"`
			} `json:"targets"`
		} `json:"extra"`
	}
	getURLJSON(t, ts.URL+"/api/v1/status", &st)
	rejecting := map[string]bool{}
	for _, x := range st.Extra.Targets {
		rejecting[x.Target] = x.Rejecting
	}
	if !rejecting["T"] || rejecting["U"] || rejecting["V"] {
		t.Errorf("status: rejecting %v, want T only", rejecting)
	}

	var h struct {
		PumpRunning bool `json:"pump_running"`
		PumpPaused  bool `json:"pump_paused"`
	}
	getURLJSON(t, ts.URL+"/healthz", &h)
	if h.PumpRunning || !h.PumpPaused {
		t.Errorf("/healthz with the pump paused: %+v, want pump_running false, pump_paused true", h)
	}
	if _, err := db.Operations.ClearPause(ctx, store.PumpPause); err != nil {
		t.Fatal(err)
	}
	getURLJSON(t, ts.URL+"/healthz", &h)
	if !h.PumpRunning || h.PumpPaused {
		t.Errorf("/healthz with the pump resumed: %+v", h)
	}
}

func getURLJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}
