package requests_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"msgx/internal/requests"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

var shanghai = func() *time.Location {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		panic(err)
	}
	return loc
}()

func TestValidateNamesWhatIsWrong(t *testing.T) {
	for _, c := range []struct {
		spec  requests.Spec
		field string // "" when valid
		want  string // the request: STYP STDB STDE
	}{
		{requests.Spec{Type: "RQRD", RefType: "airl"}, "", "AIRL  "},
		{requests.Spec{Type: "ref", RefType: "CITY"}, "", "CITY  "},
		{requests.Spec{Type: "RQRD", RefType: "FLOP"}, "ref_type", ""},
		{requests.Spec{Type: "RQRD", RefType: "AIRLINES"}, "ref_type", ""},
		{requests.Spec{Type: "RQRD"}, "ref_type", ""},
		{requests.Spec{Type: "RQFD", From: "03dec26", To: "04DEC262359"}, "", "NONE 03DEC26 04DEC262359"},
		{requests.Spec{Type: "RQFD", From: "2026-12-03", To: "2026-12-04 06:30"}, "", "NONE 03DEC260000 04DEC260630"},
		{requests.Spec{Type: "schedule", From: "2026-12-02T16:00:00Z", To: "2026-12-03T16:00:00Z"}, "", "NONE 03DEC260000 04DEC260000"},
		{requests.Spec{Type: "RQFD", To: "04DEC26"}, "from", ""},
		{requests.Spec{Type: "RQFD", From: "03DEC26"}, "to", ""},
		{requests.Spec{Type: "RQFD", From: "32DEC26", To: "04DEC26"}, "from", ""},
		{requests.Spec{Type: "RQFD", From: "tomorrow", To: "04DEC26"}, "from", ""},
		{requests.Spec{Type: "RQFD", From: "05DEC26", To: "04DEC26"}, "to", ""},
		{requests.Spec{}, "type", ""},
		{requests.Spec{Type: "RQXX"}, "type", ""},
	} {
		v, err := requests.Validate(c.spec, shanghai)
		var inv *requests.Invalid
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%+v: %v", c.spec, err)
		case c.field != "" && (!errors.As(err, &inv) || inv.Field != c.field):
			t.Errorf("%+v: %v, want a problem with %s", c.spec, err, c.field)
		case c.field == "" && fmt.Sprintf("%s %s %s", v.STYP, v.STDB, v.STDE) != c.want:
			t.Errorf("%+v: %s %s %s, want %s", c.spec, v.STYP, v.STDB, v.STDE, c.want)
		}
	}
}

func TestXMLCarriesTheMetaAndTheBody(t *testing.T) {
	now := time.Date(2026, 12, 3, 1, 2, 3, 0, time.UTC)
	v, _ := requests.Validate(requests.Spec{Type: "RQRD", RefType: "AIRL"}, shanghai)
	got := requests.XML(v.NewRequest, "000042", now, shanghai)
	for _, want := range []string{"<SNDR>VIEW</SNDR><SEQN>000042</SEQN><DTTM>20261203090203</DTTM><TYPE>RQRD</TYPE><STYP>AIRL</STYP>", "<RQRD><RTYP>AIRL</RTYP></RQRD>"} {
		if !strings.Contains(got, want) {
			t.Fatalf("RQRD XML lacks %s:\n%s", want, got)
		}
	}
	v, _ = requests.Validate(requests.Spec{Type: "RQFD", From: "03DEC26", To: "04DEC26"}, shanghai)
	got = requests.XML(v.NewRequest, "000043", now, shanghai)
	for _, want := range []string{"<TYPE>RQFD</TYPE><STYP>NONE</STYP>", "<RQFD><STDB>03DEC26</STDB><STDE>04DEC26</STDE></RQFD>"} {
		if !strings.Contains(got, want) {
			t.Fatalf("RQFD XML lacks %s:\n%s", want, got)
		}
	}
}

// eachDialect runs fn on SQLite, MariaDB, and MariaDB with the legacy's own COUTMSGS.
func eachDialect(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	for _, d := range storetest.Dialects() {
		t.Run(d.Name, func(t *testing.T) { fn(t, d.Open(t)) })
	}
}

// gatewaySends plays the legacy gateway: it marks COUTMSGS row id sent at, written as the
// gateway writes it (local time in the legacy zone, whole seconds).
func gatewaySends(t *testing.T, db *store.DB, id int64, at time.Time) {
	t.Helper()
	storetest.Exec(t, db, fmt.Sprintf(`UPDATE COUTMSGS SET COUTMSGS_DATE_SENT = '%s' WHERE COUTMSGS_ID = %d`, db.Intake.LegacyNow(at), id))
}

// The loop: SENT once the gateway sent the row, re-sent max-resends times when no answer
// comes within the timeout of the gateway's send (a new COUTMSGS row each time, which the
// gateway sends in turn), then EXPIRED.
func TestStepResendsThenExpires(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		db.Intake.SetLegacy(store.LegacyOptions{Location: shanghai})
		clk := testkit.NewClock(time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC))
		svc := requests.New(db.RequestTracker, requests.Options{Clock: clk, Location: shanghai, Timeout: time.Minute, MaxResends: 2})
		r, err := svc.Create(ctx, requests.Spec{Type: "RQRD", RefType: "AIRL"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Create(ctx, requests.Spec{Type: "RQRD", RefType: "NOPE"}); !errors.As(err, new(*requests.Invalid)) {
			t.Fatalf("a bad TYPE: %v", err)
		}
		step := func() *store.Request {
			t.Helper()
			if err := svc.Step(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := db.RequestTracker.GetRequest(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		gatewaySends(t, db, r.CoutmsgsID, clk.Now().Add(5*time.Second))
		if got := step(); got.State != store.ReqSent {
			t.Fatalf("after the gateway sent it: %+v", got)
		}
		seen := map[int64]bool{r.CoutmsgsID: true}
		for i := 1; i <= 2; i++ {
			clk.Add(time.Minute + 5*time.Second)
			got := step()
			if got.State != store.ReqRegistered || got.Resends != i || seen[got.CoutmsgsID] {
				t.Fatalf("re-send %d: %+v", i, got)
			}
			seen[got.CoutmsgsID] = true
			gatewaySends(t, db, got.CoutmsgsID, clk.Now())
			if got := step(); got.State != store.ReqSent {
				t.Fatalf("re-send %d after the gateway sent it: %+v", i, got)
			}
		}
		clk.Add(30 * time.Second)
		if got := step(); got.State != store.ReqSent {
			t.Fatalf("before the deadline: %+v", got)
		}
		clk.Add(30 * time.Second)
		if got := step(); got.State != store.ReqExpired || got.Resends != 2 || got.FinishedAt == nil {
			t.Fatalf("after the last re-send's timeout: %+v", got)
		}
		var rows int
		if err := db.SQL.QueryRow(`SELECT COUNT(*) FROM COUTMSGS`).Scan(&rows); err != nil || rows != 3 {
			t.Fatalf("%d COUTMSGS rows (%v), want the first send and 2 re-sends", rows, err)
		}
	})
}

// With requests.timeout 15s: a request the gateway sends 6 s after msgx queued it is re-sent
// 15 s after that send, not 15 s after the queueing; a request the gateway never sends is
// never re-sent nor expired, and is shown waiting for the gateway (its age in the API's
// answer and the metrics). On every dialect, the legacy COUTMSGS included.
func TestDeadlineRunsFromTheGatewaysSend(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		db.Intake.SetLegacy(store.LegacyOptions{Location: shanghai})
		t0 := time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)
		clk := testkit.NewClock(t0)
		svc := requests.New(db.RequestTracker, requests.Options{Clock: clk, Location: shanghai, Timeout: 15 * time.Second, MaxResends: 3})
		sent, err := svc.Create(ctx, requests.Spec{Type: "RQRD", RefType: "AIRL"})
		if err != nil {
			t.Fatal(err)
		}
		unsent, err := svc.Create(ctx, requests.Spec{Type: "RQFD", From: "03DEC26", To: "04DEC26"})
		if err != nil {
			t.Fatal(err)
		}
		get := func(id int64) *store.Request {
			t.Helper()
			r, err := db.RequestTracker.GetRequest(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		coutmsgs := func() int {
			t.Helper()
			var n int
			if err := db.SQL.QueryRow(`SELECT COUNT(*) FROM COUTMSGS`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		// Each second from t0 to t0+20s: one re-send at most, and none before t0+21s.
		for s := 0; s <= 20; s++ {
			clk.Set(t0.Add(time.Duration(s) * time.Second))
			if s == 6 {
				gatewaySends(t, db, sent.CoutmsgsID, clk.Now())
			}
			if err := svc.Step(ctx); err != nil {
				t.Fatal(err)
			}
			if r := get(sent.ID); r.Resends != 0 {
				t.Fatalf("at t0+%ds the request the gateway sent at t0+6s was re-sent: %+v", s, r)
			}
		}
		if r := get(sent.ID); r.State != store.ReqSent || r.DeadlineAt == nil || !r.DeadlineAt.Equal(t0.Add(21*time.Second)) {
			t.Fatalf("the sent request: %+v, want SENT with deadline t0+21s", r)
		}
		clk.Set(t0.Add(21 * time.Second))
		if err := svc.Step(ctx); err != nil {
			t.Fatal(err)
		}
		resent := get(sent.ID)
		if resent.State != store.ReqRegistered || resent.Resends != 1 || resent.CoutmsgsID == sent.CoutmsgsID {
			t.Fatalf("at t0+21s: %+v, want re-sent once", resent)
		}
		// Nobody sends anything more: an hour of steps re-sends nothing, expires nothing,
		// and queues no second COUTMSGS row behind an unsent one.
		for s := 22; s <= 3600; s += 29 {
			clk.Set(t0.Add(time.Duration(s) * time.Second))
			if s+29 > 3600 {
				clk.Set(t0.Add(time.Hour))
			}
			if err := svc.Step(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			id, cout int64
			resends  int
		}{{sent.ID, resent.CoutmsgsID, 1}, {unsent.ID, unsent.CoutmsgsID, 0}} {
			if r := get(c.id); r.State != store.ReqRegistered || r.Resends != c.resends || r.CoutmsgsID != c.cout || r.DeadlineAt != nil {
				t.Fatalf("request %d an hour on, never sent by the gateway: %+v", c.id, r)
			}
		}
		if n := coutmsgs(); n != 3 {
			t.Fatalf("%d COUTMSGS rows, want 3: the two requests and the one re-send", n)
		}
		// Shown as waiting for the gateway, with its age.
		shown, _ := json.Marshal(svc.Show(get(unsent.ID)))
		if !strings.Contains(string(shown), `"waiting_for_gateway_s":3600`) || !strings.Contains(string(shown), `"waiting_for_gateway_since":"2026-12-03T01:00:00Z"`) {
			t.Fatalf("the unsent request as the API shows it: %s", shown)
		}
		if shown, _ := json.Marshal(svc.Show(get(sent.ID))); !strings.Contains(string(shown), `"waiting_for_gateway_s":3579`) {
			t.Fatalf("the unsent re-send as the API shows it: %s", shown)
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(svc.Collectors()...)
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, f := range families {
			got[f.GetName()] = f.GetMetric()[0].GetGauge().GetValue()
		}
		if got["msgx_requests_waiting_for_gateway"] != 2 || got["msgx_requests_waiting_for_gateway_oldest_age_seconds"] != 3600 {
			t.Fatalf("metrics: %v, want 2 waiting, the oldest for 3600 s", got)
		}
		// Once the gateway sends them, they are no longer waiting.
		gatewaySends(t, db, resent.CoutmsgsID, clk.Now())
		gatewaySends(t, db, unsent.CoutmsgsID, clk.Now())
		if err := svc.Step(ctx); err != nil {
			t.Fatal(err)
		}
		if got, _ := json.Marshal(svc.Show(get(unsent.ID))); strings.Contains(string(got), "waiting_for_gateway") {
			t.Fatalf("a sent request shown waiting: %s", got)
		}
		if families, _ := reg.Gather(); families[0].GetMetric()[0].GetGauge().GetValue() != 0 {
			t.Fatalf("metrics after the gateway sent them: %v", families)
		}
	})
}
