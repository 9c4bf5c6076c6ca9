package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"msgx/internal/flight/flighttest"
	"msgx/internal/flight/redisflight"
)

// sisTime formats a local time as ddMMMyyHHmm (24-hour clock: Go's "15", not "03").
func sisTime(t time.Time) string { return strings.ToUpper(t.Format("02Jan061504")) }

func e2eFltr(flid int64, flno, mvin string, sodt time.Time, extra string) string {
	return fmt.Sprintf(`<FLTR><FLID>%d</FLID><ALCD>%s</ALCD><FLNO>%s</FLNO><MVIN>%s</MVIN><SODT>%s</SODT>`+
		`<FLTY>W</FLTY><FLIN>D</FLIN><ACFT>320</ACFT><STND>%s</STND>%s</FLTR>`, flid, flno[:2], flno, mvin, sisTime(sodt), "2"+flno[len(flno)-2:], extra)
}

func e2eSchd(seqn int, fltrs ...string) string {
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20260101000000</DTTM><TYPE>SCHD</TYPE><STYP>DNLD</STYP></META>
<SCHD><RECS>%d</RECS>%s</SCHD></MSG>`, seqn, len(fltrs), strings.Join(fltrs, "\n"))
}

func e2eFlop(seqn int, styp string, flid int64, payload string) string {
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20260101000000</DTTM><TYPE>FLOP</TYPE><STYP>%s</STYP></META>
<FLOP><FLID>%d</FLID><FFID>X</FFID>%s</FLOP></MSG>`, seqn, styp, flid, payload)
}

// TestFlightsEndToEnd drives the flight picture over HTTP: a day's snapshot, FLOP changes, a
// duplicate, an orphan, an FDEL and a second snapshot that drops a flight; then it checks the
// board the API shows and every event the messages committed.
func TestFlightsEndToEnd(t *testing.T) {
	t.Parallel()
	eachDB(t, testFlightsEndToEnd)
}

func testFlightsEndToEnd(t *testing.T, db dbEnv) { flightsEndToEnd(t, db) }

// TestFlightsEndToEndPhaseA is TestFlightsEndToEnd in phase A (flights in Redis, under a
// key prefix of the test's own), with the same expectations: the same board through the API,
// the same events in the same order.
func TestFlightsEndToEndPhaseA(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { flightsEndToEnd(t, db, phaseAEnv(t)...) })
}

func flightsEndToEnd(t *testing.T, db dbEnv, env ...string) {
	ctx := t.Context()
	day := tomorrow(t)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }

	s := db.start(t, append([]string{"MSGX_PIPELINE_POLL_INTERVAL=50ms"}, env...)...)

	master := e2eFltr(91001, "CA1201", "D", at(10, 0), "")
	arrival := e2eFltr(91002, "CA1202", "A", at(11, 0), "")
	codeShare := e2eFltr(91003, "MU7703", "D", at(10, 30), "<CSOP>CA</CSOP><CSFT>CA1201</CSFT><MAID>91001</MAID>")
	dropped := e2eFltr(91004, "CA1204", "A", at(13, 0), "")

	ids := map[string]int64{}
	ids["dnld1"] = s.post(e2eSchd(810001, master, codeShare, arrival, dropped))
	ids["ctot"] = s.post(e2eFlop(810002, "CTOT", 91001, "<CTOT>"+sisTime(at(10, 12))+"</CTOT>"))
	ids["dup"] = s.post(e2eFlop(810002, "CTOT", 91001, "<CTOT>"+sisTime(at(10, 12))+"</CTOT>"))
	ids["stnd"] = s.post(e2eFlop(810003, "STND", 91002, "<STND>230</STND>"))
	ids["orphan"] = s.post(e2eFlop(810004, "STND", 99999, "<STND>230</STND>"))
	ids["fdel"] = s.post(e2eFlop(810005, "FDEL", 91004, "<FDEL/>"))
	ids["dnld2"] = s.post(e2eSchd(810006, master, arrival))

	for _, k := range []string{"dnld1", "ctot", "stnd", "fdel", "dnld2"} {
		s.await(ids[k], k+" SUCCEEDED", state("SUCCEEDED", ""))
	}
	if m := s.await(ids["dup"], "SKIPPED", state("SKIPPED", "")); m.LastError == nil || *m.LastError != fmt.Sprintf("duplicate-of:%d", ids["ctot"]) {
		t.Fatalf("duplicate: %+v", m)
	}
	s.await(ids["orphan"], "DEAD/ORPHAN", state("DEAD", "ORPHAN"))

	board, err := s.api().Board(ctx, day.Format(time.DateOnly))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, raw := range board.Flights {
		var f map[string]any
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%v %v STND=%v CTOT=%v CSFL=%v", f["FLID"], f["FLNO"], f["STND"], f["CTOT"], f["CSFL"]))
	}
	ctot := at(10, 12).UTC().Format(time.RFC3339)
	want := []string{
		"91001 CA1201 STND=201 CTOT=" + ctot + " CSFL=<nil>", // CTOT kept by the snapshot; code-share dropped
		"91002 CA1202 STND=202 CTOT=<nil> CSFL=<nil>",        // the snapshot's stand wins over the FLOP
	}
	if prefix := redisPrefixOf(env); prefix != "" {
		// Phase A: the board the API showed is Redis's.
		rs := redisflight.New(redisflight.Options{Addr: flighttest.RedisAddr(), Prefix: prefix})
		defer rs.Close()
		if es, err := rs.Day(context.Background(), day.Format(time.DateOnly)); err != nil || len(es) != len(want) || !strings.Contains(s.logs.String(), "phase A: flights in Redis") {
			t.Fatalf("phase A: Redis holds %d flights of the day (%v)\n%s", len(es), err, s.logs)
		}
		// The sentinel finds FLIGHT_STATE the mirror of Redis.
		if rep := s.checkConsistency(); rep.Checked != len(want) || len(rep.Mismatches) != 0 {
			t.Fatalf("consistency: %+v", rep)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("board of %s:\n%s\nwant:\n%s", day.Format(time.DateOnly), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for flid, code := range map[string]int{"91001": 200, "91003": 404, "91004": 404, "x": 400} {
		resp, err := http.Get(s.url + "/api/v1/flights/" + flid)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("GET /api/v1/flights/%s: %d, want %d", flid, resp.StatusCode, code)
		}
	}
	if resp, err := http.Get(s.url + "/api/v1/flights?day=2026-13-01"); err != nil || resp.StatusCode != 400 {
		t.Errorf("bad day: %v %v", resp.StatusCode, err)
	}

	// A seasonal schedule is stored and readable; it emits no event.
	ddMMMyy := func(t time.Time) string { return strings.ToUpper(t.Format("02Jan06")) }
	sdat, edat := day.AddDate(0, 0, -10), day.AddDate(0, 3, 0)
	season := s.post(fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>810007</SEQN><DTTM>20260101000000</DTTM><TYPE>SCHS</TYPE><STYP>DNLD</STYP></META>
<SCHS><SNAM>Current</SNAM><APCD>CTU</APCD><SDAT>%s</SDAT><EDAT>%s</EDAT><RECS>1</RECS>
<FLTR><ALCD>CA</ALCD><FLNO>CA1201</FLNO><MVIN>D</MVIN><STDT>%s</STDT><EDDT>%s</EDDT><DYOP>1234567</DYOP><SCHT>1000</SCHT>
<FLTY>W</FLTY><FLIN>D</FLIN><ACFT>320</ACFT></FLTR></SCHS></MSG>`, ddMMMyy(sdat), ddMMMyy(edat), ddMMMyy(sdat), ddMMMyy(edat)))
	s.await(season, "SCHS SUCCEEDED", state("SUCCEEDED", ""))
	seasons, err := s.api().Seasons(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(seasons) != 1 || seasons[0].Key != sdat.Format(time.DateOnly)+"/"+edat.Format(time.DateOnly) || seasons[0].Season["SNAM"] != "Current" {
		t.Fatalf("seasons: %+v", seasons)
	}

	// Every event, in EVENT_ID order, as the targets take it: four per changed flight (FLOP,
	// SCHD, NOTIFY, ES), one shared row rendered for each.
	name := map[int64]string{}
	for k, v := range ids {
		name[v] = k
	}
	var evs []string
	notify := map[string]string{}
	for _, e := range targetEvents(t, db.open(t)) {
		evs = append(evs, fmt.Sprintf("%s %s %s %s", name[e.msg], e.key, e.target, e.kind))
		if e.target == "REDIS_NOTIFY" {
			notify[name[e.msg]+" "+e.key] = e.payload
		}
	}
	four := func(msg, key string, del bool) []string {
		es := "es-upsert"
		if del {
			es = "es-delete"
		}
		return []string{msg + " " + key + " KAFKA_FLOP flop", msg + " " + key + " KAFKA_SCHD schd", msg + " " + key + " REDIS_NOTIFY notify", msg + " " + key + " ES_FLIGHT " + es}
	}
	var wantEvs []string
	for _, k := range []string{"91001", "91003", "91002", "91004"} {
		wantEvs = append(wantEvs, four("dnld1", k, false)...)
	}
	wantEvs = append(wantEvs, four("ctot", "91001", false)...)
	wantEvs = append(wantEvs, four("stnd", "91002", false)...)
	wantEvs = append(wantEvs, four("fdel", "91004", true)...)
	wantEvs = append(wantEvs, four("dnld2", "91001", false)...)
	wantEvs = append(wantEvs, four("dnld2", "91003", true)...)
	wantEvs = append(wantEvs, four("dnld2", "91002", false)...)
	if strings.Join(evs, "\n") != strings.Join(wantEvs, "\n") {
		t.Fatalf("MSG_EVENT:\n%s\nwant:\n%s", strings.Join(evs, "\n"), strings.Join(wantEvs, "\n"))
	}
	for k, typ := range map[string]string{"dnld1 91001": "schedule", "ctot 91001": "update", "fdel 91004": "delete", "dnld2 91003": "delete"} {
		if !strings.Contains(notify[k], `"type":"`+typ+`"`) {
			t.Errorf("notification %s: %s, want type %s", k, notify[k], typ)
		}
	}
	// The first snapshot's window is [10:00, 13:00] local: its latest FLTR is the afternoon
	// arrival 91004 (a 12-hour clock in the test's SIS times once made it 01:00).
	window := fmt.Sprintf(`"scheduleStart":%q,"scheduleEnd":%q`, at(10, 0).UTC().Format(time.RFC3339), at(13, 0).UTC().Format(time.RFC3339))
	if !strings.Contains(notify["dnld1 91001"], window) {
		t.Errorf("notification dnld1 91001: %s, want the window %s", notify["dnld1 91001"], window)
	}
}
