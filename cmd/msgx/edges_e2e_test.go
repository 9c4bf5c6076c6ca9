package main_test

// Edges a user meets through the binary (issue 19's smaller items): a META tag in the wrong
// letter case, the received time of an archived message, a port in use at start, a body
// whose charset cannot be told, and a message with more records than sis.max-records.

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"msgx/internal/store"
)

// A META element in the wrong letter case is DEAD/MALFORMED with a reason that names what
// was found, not one that calls the TYPE empty.
func TestMetaTagInTheWrongCaseIsNamed(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
		id := s.post(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>190001</SEQN><DTTM>20261201091500</DTTM><Type>FLOP</Type><STYP>CTOT</STYP></META>
<FLOP><FLID>19001</FLID><FFID>X</FFID><CTOT>01DEC261030</CTOT></FLOP></MSG>`)
		m := s.await(id, "DEAD/MALFORMED", state("DEAD", "MALFORMED"))
		const want = "META has <Type> where <TYPE> is expected (tags are case-sensitive)"
		if m.LastError == nil || !strings.Contains(*m.LastError, want) {
			t.Fatalf("last_error %q, want it to say %q", lastErrorOf(m), want)
		}
	})
}

// An archived message (its row moved to CMINMSGS_HST) keeps its received_at in the API, in
// the message and in the listing.
func TestArchivedMessageKeepsItsReceivedTime(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
		id := s.post(airline)
		s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		before := s.message(id)
		if before.ReceivedAt == nil {
			t.Fatalf("message %d has no received_at before ARCHIVE", id)
		}

		if _, err := db.open(t).SQL.Exec(`UPDATE PROC_STATE SET PROCESSED_AT = ?`, store.T(time.Now().Add(-48*time.Hour))); err != nil {
			t.Fatal(err)
		}
		if r := s.awaitJob(s.startJob("ARCHIVE")); !strings.HasPrefix(r, "archived 1 messages") {
			t.Fatalf("ARCHIVE: %q, want the message archived", r)
		}

		after := s.message(id)
		if after.ReceivedAt == nil || !after.ReceivedAt.Equal(*before.ReceivedAt) {
			t.Fatalf("archived message %d: received_at %v, want %v", id, after.ReceivedAt, before.ReceivedAt)
		}
		list, err := s.api().Messages(t.Context(), url.Values{"state": {"SUCCEEDED"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Messages) != 1 || list.Messages[0].ReceivedAt == nil || !list.Messages[0].ReceivedAt.Equal(*before.ReceivedAt) {
			t.Fatalf("listing of the archived message: %+v, want received_at %v", list.Messages, before.ReceivedAt)
		}
	})
}

// A port in use (http.addr or http.admin-addr) ends `msgx serve` at once with an error naming
// the address and its key, and before anything is written: no pump lease, no shadow watermark.
func TestServeOnAPortInUseWritesNothing(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		if out, err := db.command(t, "migrate").CombinedOutput(); err != nil {
			t.Fatalf("migrate: %v\n%s", err, out)
		}
		busy, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer busy.Close()
		addr := busy.Addr().String()
		for _, key := range []string{"http.addr", "http.admin-addr"} {
			cmd := db.command(t, "serve")
			cmd.Env = append(cmd.Env, "MSGX_MODE=shadow", "MSGX_PIPELINE_AUTOSTART=true")
			if key == "http.addr" {
				cmd.Env = append(cmd.Env, "MSGX_HTTP_ADDR="+addr)
			} else {
				cmd.Env = append(cmd.Env, "MSGX_HTTP_ADMIN_ADDR="+addr)
			}
			out, _ := cmd.CombinedOutput()
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
				t.Fatalf("serve with %s in use: exit %v, want 1\n%s", key, cmd.ProcessState, out)
			}
			if want := "listen on " + addr + " (" + key + ")"; !strings.Contains(string(out), want) || !strings.Contains(string(out), "address already in use") {
				t.Fatalf("serve with %s in use says:\n%s\nwant %q and the reason", key, out, want)
			}
			sqlDB := db.open(t).SQL
			var leases, watermarks int
			if err := sqlDB.QueryRow(`SELECT COUNT(*) FROM PUMP_LEASE`).Scan(&leases); err != nil {
				t.Fatal(err)
			}
			if err := sqlDB.QueryRow(`SELECT COUNT(*) FROM MSGX_COUNTER WHERE NAME = ?`, store.ShadowWatermarkCounter).Scan(&watermarks); err != nil {
				t.Fatal(err)
			}
			if leases != 0 || watermarks != 0 {
				t.Fatalf("serve with %s in use wrote %d lease row(s) and %d shadow watermark(s)\n%s", key, leases, watermarks, out)
			}
		}
	})
}

// A UTF-8 body without an XML declaration that is also valid GBK, posted as GBK, is refused
// as ambiguous (nothing stored) with a reason saying how to fix it; the same text sent as
// UTF-8, or as real GBK bytes, is taken.
func TestInboxRefusesACharsetItCannotTell(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
		regl := func(name string) string {
			return `<MSG><META><SNDR>AODB</SNDR><SEQN>190101</SEQN><DTTM>20261201091600</DTTM><TYPE>REGL</TYPE><STYP>ADD</STYP></META>` +
				`<RECS>1</RECS><REGL><REGC>NE</REGC><REGN>NORTH EAST</REGN><RGNC>` + name + `</RGNC></REGL></MSG>`
		}
		post := func(ctype, body string) (int, map[string]string) {
			resp, err := http.Post(s.url+"/cminmsgs/send", ctype, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e map[string]string
			json.NewDecoder(resp.Body).Decode(&e)
			return resp.StatusCode, e
		}
		status, e := post("text/xml; charset=GBK", regl("东北"))
		if status != 415 || e["code"] != "ambiguous_charset" || !strings.Contains(e["error"], "valid both as GBK and as UTF-8") ||
			!strings.Contains(e["error"], `encoding="GBK"`) || !strings.Contains(e["error"], "charset=UTF-8") {
			t.Fatalf("UTF-8 posted as GBK without a declaration: %d %v, want 415 ambiguous_charset saying how to fix it", status, e)
		}
		list, err := s.api().Messages(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if list.Count != 0 {
			t.Fatalf("a refused body was stored: %d messages", list.Count)
		}
		// Sent as what it is, it is taken and read right.
		id := s.post(`<?xml version="1.0" encoding="UTF-8"?>` + regl("东北"))
		s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		if ref := s.ref("REGL", "NE"); ref.Fields["RGNC"] != "东北" {
			t.Fatalf("RGNC %v, want 东北", ref.Fields["RGNC"])
		}
	})
}

// sis.max-records: a message with as many records as the limit is processed; one with more
// is parked DEAD/CODEC_ERROR with a reason naming the limit and its key, and is processed when
// replayed after the limit is raised.
func TestMessageOverMaxRecordsIsParked(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_SIS_MAX_RECORDS=3")
		regls := func(seqn, n int) string {
			var b strings.Builder
			for i := range n {
				fmt.Fprintf(&b, `<REGL><REGC>Q%d</REGC><REGN>REGION %d</REGN></REGL>`, i, i)
			}
			return fmt.Sprintf(`<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20261201091600</DTTM><TYPE>REGL</TYPE><STYP>ADD</STYP></META><RECS>%d</RECS>%s</MSG>`,
				seqn, n, b.String())
		}
		atLimit := s.post(regls(190201, 3))
		over := s.post(regls(190202, 4))
		flops := s.post(fmt.Sprintf(`<MSG><META><SNDR>AODB</SNDR><SEQN>190203</SEQN><DTTM>20261201091600</DTTM><TYPE>FLOP</TYPE><STYP>CTOT</STYP></META>%s</MSG>`,
			strings.Repeat(`<FLOP><FLID>19002</FLID><FFID>X</FFID><CTOT>01DEC261030</CTOT></FLOP>`, 4)))
		s.await(atLimit, "SUCCEEDED", state("SUCCEEDED", ""))
		const want = "more than 3 records in one message (the limit sis.max-records sets)"
		for _, id := range []int64{over, flops} {
			m := s.await(id, "DEAD/CODEC_ERROR", state("DEAD", "CODEC_ERROR"))
			if !strings.Contains(lastErrorOf(m), want) {
				t.Fatalf("message %d: last_error %q, want it to say %q", id, lastErrorOf(m), want)
			}
		}

		// With the limit raised, a replay processes the message.
		s.stop()
		s = db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_SIS_MAX_RECORDS=4")
		s.replay(over)
		s.await(over, "SUCCEEDED", state("SUCCEEDED", ""))
	})
}

// lastErrorOf is m's last_error, "" when null.
func lastErrorOf(m message) string {
	if m.LastError == nil {
		return ""
	}
	return *m.LastError
}
