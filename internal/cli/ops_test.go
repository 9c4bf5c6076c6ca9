package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/cli"
)

// decode decodes answer, an API answer as the server writes it, into a value of type T.
func decode[T any](t *testing.T, answer string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(answer), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// same fails t when got is not want, showing both.
func same(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n%s\nwant:\n%s", what, got, want)
	}
}

var shanghai = func() cli.Zone {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		panic(err)
	}
	return cli.Zone{Loc: loc}
}()

// msgx events: a payload's size, where to fetch one the list elides, or the last error with
// its class; a line too long is cut.
func TestWriteEvents(t *testing.T) {
	list := decode[client.EventList](t, `{"events":[
		{"event_id":9,"msg_id":4,"target":"KAFKA_FLOP","flight_key":"7002","state":"SENT","attempts":1,"payload_bytes":94},
		{"event_id":8,"msg_id":4,"target":"ES_FLIGHT","state":"PENDING","payload_bytes":40000,"payload_elided":true},
		{"event_id":7,"msg_id":3,"target":"WEBHOOK","state":"DEAD","attempts":5,"error_class":"INFRA","last_error":"`+strings.Repeat("x", 130)+`"}]}`)
	var b bytes.Buffer
	cli.WriteEvents(&b, list.Events)
	same(t, "events", b.String(), `event  target      state    attempts  message  flight  payload / last error
9      KAFKA_FLOP  SENT     1         4        7002    94 bytes
8      ES_FLIGHT   PENDING  0         4        -       40000 bytes (elided: GET /api/v1/events/8/payload?target=ES_FLIGHT)
7      WEBHOOK     DEAD     5         3        -       INFRA: `+strings.Repeat("x", 112)+"…\n")
}

// msgx flight --history: a change's time in the zone, its message, and each field in name
// order, old → new, or on lines of their own when long.
func TestWriteFlightChange(t *testing.T) {
	c := decode[client.FlightChange](t, `{"event_id":12,"msg_id":5,"type_tag":"FLOP-STND","at":"2026-12-03T06:10:00Z","op":"update",
		"changes":{"STND":{"Old":"211","New":"212"},"GTDT":{"Old":null,"New":[{"GATE":"C01","NOTE":"`+strings.Repeat("n", 60)+`"}]}}}`)
	var b bytes.Buffer
	cli.WriteFlightChange(&b, c, shanghai)
	same(t, "change", b.String(), `2026-12-03 14:10:00  message 5 FLOP-STND  update (event 12)
    GTDT   old: null
           new: [{"GATE":"C01","NOTE":"`+strings.Repeat("n", 60)+`"}]
    STND   "211" → "212"
`)
}

// msgx replay: the counts and the ids moved; a dry run's table; an events replay's note.
func TestWriteReplay(t *testing.T) {
	res := decode[client.ReplayAnswer](t, `{"moved":3,"skipped":1,"ids":[4,5,6],"note":"delivered again in EVENT_ID order",
		"items":[{"id":4,"tag":"FLOP-STND","target":"KAFKA_FLOP","error_class":"ORPHAN","age_seconds":75,"fails":"ORPHAN: flight FLID 7 is not in the store","sets":["STND","PSDT"],"leaves":["GTDT (message 9 set it later)"]}]}`)
	for _, c := range []struct {
		name           string
		events, dryRun bool
		want           string
	}{
		{"messages", false, false, "moved 3 to PENDING, skipped 1\n4\n5\n6\n"},
		{"events", true, false, "moved 3 dead events to PENDING, skipped 1\nnote: delivered again in EVENT_ID order\n"},
		{"messages dry run", false, true, `dry run: would move 3 messages to PENDING, skip 1
        id  tag                           class         age
         4  FLOP-STND                     ORPHAN        1m15s
            would fail: ORPHAN: flight FLID 7 is not in the store
            would set: STND, PSDT
            would leave: GTDT (message 9 set it later)
… and 2 more (the table shows the first 1)
`},
		{"events dry run", true, true, `dry run: would move 3 dead events to PENDING, skip 1
        id  target / tag                  class         age
         4  KAFKA_FLOP / FLOP-STND        ORPHAN        1m15s
            would fail: ORPHAN: flight FLID 7 is not in the store
            would set: STND, PSDT
            would leave: GTDT (message 9 set it later)
… and 2 more (the table shows the first 1)
note: delivered again in EVENT_ID order
`},
	} {
		var b bytes.Buffer
		cli.WriteReplay(&b, res, c.events, c.dryRun)
		same(t, c.name, b.String(), c.want)
	}
}

// msgx ack says what it acknowledged, what already was, and what it left alone.
func TestWriteAck(t *testing.T) {
	var b bytes.Buffer
	cli.WriteAck(&b, "message", decode[client.AckResult](t, `{"acked":[4,5],"already":[6],"not_dead":[7]}`))
	cli.WriteAck(&b, "event", decode[client.AckResult](t, `{"acked":[9]}`))
	same(t, "ack", b.String(), `acknowledged 2 dead message(s) [4 5]; already acknowledged: [6]
not DEAD (unknown or replayed), left alone: [7]
acknowledged 1 dead event(s) [9]
`)
}

// msgx pause and resume: paused by whom since when and why, or running, and whether it
// already was; the zone is asked for only when a time is written.
func TestWritePause(t *testing.T) {
	asked := 0
	zone := func() cli.Zone { asked++; return shanghai }
	var b bytes.Buffer
	cli.WritePause(&b, "the pump", decode[client.PauseAnswer](t, `{"paused":true,"changed":true,"pause":{"name":"pump","paused_by":"ops","reason":"maintenance","paused_at":"2026-12-03T01:00:00Z"}}`), zone)
	cli.WritePause(&b, "target KAFKA_FLOP", decode[client.PauseAnswer](t, `{"paused":true,"changed":false,"pause":{"name":"target:KAFKA_FLOP","paused_by":"li","paused_at":"2026-12-03T01:00:00Z"}}`), zone)
	cli.WritePause(&b, "the pump", decode[client.PauseAnswer](t, `{"paused":false,"changed":true}`), zone)
	cli.WritePause(&b, "the pump", decode[client.PauseAnswer](t, `{"paused":false,"changed":false}`), zone)
	same(t, "pause", b.String(), `the pump paused by ops since 2026-12-03 09:00:00 Asia/Shanghai: maintenance
target KAFKA_FLOP paused by li since 2026-12-03 09:00:00 Asia/Shanghai (it already was)
the pump running
the pump running (it was not paused)
`)
	if asked != 2 {
		t.Errorf("the zone was asked for %d times, want 2", asked)
	}
}

// msgx jobs: the table with the running job's doing, and the next page; "no jobs" for none.
func TestWriteJobs(t *testing.T) {
	list := decode[client.JobList](t, `{"jobs":[
		{"id":3,"kind":"RETENTION","state":"RUNNING","after_msg_id":40,"created_at":"2026-12-03T01:00:00Z","progress":{"doing":"purging SENT events","running_seconds":65.4}},
		{"id":2,"kind":"ARCHIVE","state":"DONE","after_msg_id":12,"created_at":"2026-12-02T23:30:00Z","result":"archived 3 messages"},
		{"id":1,"kind":"REDIS_RESTORE","state":"DEAD","attempts":3,"created_at":"2026-12-02T20:00:00Z","last_error":"redis: connection refused"}]}`)
	var b bytes.Buffer
	cli.WriteJobs(&b, list.Jobs, "--before 1", shanghai)
	cli.WriteJobs(&b, nil, "", shanghai)
	same(t, "jobs", b.String(), `job  kind           state    after  created (Asia/Shanghai)  result / last error / doing
3    RETENTION      RUNNING  40     2026-12-03 09:00:00      purging SENT events (for 1m5s)
2    ARCHIVE        DONE     12     2026-12-03 07:30:00      archived 3 messages
1    REDIS_RESTORE  DEAD     0      2026-12-03 04:00:00      redis: connection refused
more: --before 1
no jobs
`)
}

// msgx jobs --kinds: whether each kind can run here, and why not.
func TestWriteKinds(t *testing.T) {
	var b bytes.Buffer
	kinds := decode[[]client.JobKind](t, `[{"kind":"ARCHIVE","runnable":true},{"kind":"REDIS_RESTORE","runnable":false,"reason":"phase B: Redis does not hold the flights"}]`)
	if err := cli.WriteKinds(&b, kinds); err != nil {
		t.Fatal(err)
	}
	same(t, "kinds", b.String(), `kind           runnable  why not
ARCHIVE        yes       -
REDIS_RESTORE  no        phase B: Redis does not hold the flights
`)
}

// msgx audit: who did what to which subject, when in the zone its head names.
func TestWriteAudit(t *testing.T) {
	var b bytes.Buffer
	cli.WriteAudit(&b, decode[client.AuditPage](t, `{"audit":[
		{"id":2,"at":"2026-12-03T01:00:00Z","actor":"ops","role":"operator","action":"message.park","subject":"message:42","detail":"poison,\n AODB ticket 4711"},
		{"id":1,"at":"2026-12-03T00:59:00Z","actor":"li","role":"admin","action":"job.start","subject":"","detail":""}]}`), shanghai)
	same(t, "audit", b.String(), `id  at (Asia/Shanghai)   actor  role      action        subject     detail
2   2026-12-03 09:00:00  ops    operator  message.park  message:42  poison, AODB ticket 4711
1   2026-12-03 08:59:00  li     admin     job.start     -           
`)
}

// msgx messages --follow prints a line a message, or with --json a JSON object a line.
func TestWriteMessages(t *testing.T) {
	ms := decode[[]client.Message](t, `[{"id":7,"state":"DEAD","error_class":"ORPHAN","type_tag":"FLOP-CHOT","note":"n","last_error":"flight FLID 7002 is not in the store","warnings":["w"]},
		{"id":8,"state":"SUCCEEDED","type_tag":"FLOP-STND","note":"FLOP STND: 1 record; 1 flight written"}]`)
	var b bytes.Buffer
	cli.WriteMessageHeader(&b)
	cli.WriteMessages(&b, ms, false)
	same(t, "lines", b.String(), `      id  state      class        type        note / last error
       7  DEAD       ORPHAN       FLOP-CHOT   flight FLID 7002 is not in the store [1 warning(s)]
       8  SUCCEEDED  -            FLOP-STND   FLOP STND: 1 record; 1 flight written
`)
	b.Reset()
	cli.WriteMessages(&b, ms, true)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 || decode[client.Message](t, lines[1]).ID != 8 {
		t.Errorf("JSON lines:\n%s", b.String())
	}
}

// msgx board: the day and zones named, the flights the filter keeps in scheduled order with
// their estimate, actual, stand, gate, status and remarks, the count, and the time now; a
// board as of a past time says what it was rebuilt from and its warnings instead.
func TestBoardPage(t *testing.T) {
	b := decode[client.Board](t, `{"day":"2026-12-03","timezone":"Asia/Shanghai","count":2,"flights":[
		{"FLID":7001,"FLNO":"CA1301","ALCD":"CA","MVIN":"D","TRML":"T2","SODT":"2026-12-03T02:00:00Z","EOBT":"2026-12-03T02:20:00Z",
		 "PSDT":[{"PSST":"212"}],"GTDT":[{"GATE":"C01"},{"GATE":"C02"}],"ACFT":"320","RENO":"B-1234","FTSS":"DEL","DELY":[{"CODE":"RA","DURA":20}]},
		{"FLID":7002,"FLNO":"MU5402","ALCD":"MU","MVIN":"A","TRML":"T1","SODT":"2026-12-03T16:30:00Z","CNCL":"2026-12-03T10:00:00Z"}]}`)
	now := time.Date(2026, 12, 3, 1, 5, 0, 0, time.UTC)
	statuses := map[string]string{"DEL": "delayed"}
	page, err := cli.BoardPage(b, cli.BoardFilter{}, false, statuses, now)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "board", page, `flights of 2026-12-03 (airport day, Asia/Shanghai)
flight  FLID  A/D  scheduled (Asia/Shanghai)  estimated  actual  terminal  stand  gate     belt  aircraft    status         remarks
CA1301  7001  D    10:00                      10:20              T2        212    C01 C02        320 B-1234  DEL delayed    delay RA 20 min
MU5402  7002  A    00:30 12-04                                   T1                                          CNL cancelled  
2 of 2 flights; at 2026-12-03 09:05:00 Asia/Shanghai
`)
	asOf := time.Date(2026, 12, 3, 0, 15, 0, 0, time.UTC)
	b.AsOf, b.HistoryFrom, b.Messages, b.Warnings = &asOf, &asOf, 40, []string{"message 12 could not be decoded"}
	page, err = cli.BoardPage(b, cli.BoardFilter{Movement: "A"}, true, statuses, now)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "board as of", page, `flights of 2026-12-03 (airport day, Asia/Shanghai), times in UTC
flight  FLID  A/D  scheduled (UTC)  estimated  actual  terminal  stand  gate  belt  aircraft  status         remarks
MU5402  7002  A    16:30                               T1                                     CNL cancelled  
1 of 2 flights (filtered); as it stood at 2026-12-03 00:15:00 UTC, rebuilt from 40 applied messages (history kept from 2026-12-03 00:15:00 UTC)
warning: message 12 could not be decoded
`)
	b.Timezone = "Nowhere/Land"
	if _, err := cli.BoardPage(b, cli.BoardFilter{}, false, statuses, now); err == nil || !strings.Contains(err.Error(), `"Nowhere/Land" is not known`) {
		t.Errorf("a zone this machine does not know: %v", err)
	}
}

// --json prints an answer indented.
func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := cli.WriteJSON(&b, map[string]any{"moved": 1, "ids": []int{4}}); err != nil {
		t.Fatal(err)
	}
	same(t, "JSON", b.String(), "{\n  \"ids\": [\n    4\n  ],\n  \"moved\": 1\n}\n")
}

// Piped, a watched board is one text after another with a blank line between; a failed
// redraw is said and tried again; a failed first draw ends the watch; the end of the context
// ends it after the text in hand.
func TestWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	draw := func() (string, error) {
		n++
		switch n {
		case 2:
			return "", errors.New("connection refused")
		case 3:
			cancel()
		}
		return fmt.Sprintf("board %d\n", n), nil
	}
	var b bytes.Buffer
	if err := cli.Watch(ctx, &b, time.Millisecond, draw); err != nil {
		t.Fatal(err)
	}
	same(t, "watch", b.String(), "board 1\n\ncould not refresh (connection refused); trying again in 1ms\n\nboard 3\n")
	if err := cli.Watch(context.Background(), &b, time.Millisecond, func() (string, error) { return "", errors.New("no server") }); err == nil || err.Error() != "no server" {
		t.Errorf("a first draw that fails: %v", err)
	}
}
