package requests_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"msgx/internal/requests"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
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

type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

// The loop: SENT once the gateway sent the row, re-sent max-resends times when no answer
// comes within the timeout (a new COUTMSGS row each time), then EXPIRED.
func TestStepResendsThenExpires(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := &clock{time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)}
		svc := requests.New(db, requests.Options{Clock: clk, Location: shanghai, Timeout: time.Minute, MaxResends: 2})
		r, err := svc.Create(ctx, requests.Spec{Type: "RQRD", RefType: "AIRL"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Create(ctx, requests.Spec{Type: "RQRD", RefType: "NOPE"}); !requests.IsInvalid(err) {
			t.Fatalf("a bad TYPE: %v", err)
		}
		storetest.Exec(t, db, fmt.Sprintf(`UPDATE COUTMSGS SET COUTMSGS_DATE_SENT = '2026-12-03 09:00:05' WHERE COUTMSGS_ID = %d`, r.CoutmsgsID))
		step := func() *store.Request {
			t.Helper()
			if err := svc.Step(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := db.GetRequest(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		if got := step(); got.State != store.ReqSent {
			t.Fatalf("after the gateway sent it: %+v", got)
		}
		seen := map[int64]bool{r.CoutmsgsID: true}
		for i := 1; i <= 2; i++ {
			clk.t = clk.t.Add(time.Minute)
			got := step()
			if got.State != store.ReqRegistered || got.Resends != i || seen[got.CoutmsgsID] {
				t.Fatalf("re-send %d: %+v", i, got)
			}
			seen[got.CoutmsgsID] = true
		}
		clk.t = clk.t.Add(30 * time.Second)
		if got := step(); got.State != store.ReqRegistered {
			t.Fatalf("before the deadline: %+v", got)
		}
		clk.t = clk.t.Add(30 * time.Second)
		if got := step(); got.State != store.ReqExpired || got.Resends != 2 || got.FinishedAt == nil {
			t.Fatalf("after the last re-send's timeout: %+v", got)
		}
		var rows int
		if err := db.SQL.QueryRow(`SELECT COUNT(*) FROM COUTMSGS`).Scan(&rows); err != nil || rows != 3 {
			t.Fatalf("%d COUTMSGS rows (%v), want the first send and 2 re-sends", rows, err)
		}
	})
}
