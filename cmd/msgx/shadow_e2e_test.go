package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisForE2E returns a client of the test Redis; it fails under MSGX_TEST_REQUIRE_SERVICES=1
// when Redis does not answer and skips otherwise.
func redisForE2E(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", DialTimeout: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		if os.Getenv("MSGX_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("Redis is not reachable at 127.0.0.1:6379 (%v) (MSGX_TEST_REQUIRE_SERVICES=1)", err)
		}
		t.Skipf("Redis is not reachable at 127.0.0.1:6379 (%v); start redis-server to run this test", err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestShadowDiffAgainstTheLegacyShape runs msgx with a format-legacy Redis target (a copy of
// REDIS_NOTIFY) over two snapshots and five FLOPs, captures what it publishes, and compares it
// with `msgx shadow diff` to a capture of what the legacy publishes for the same messages,
// written here from docs/sis-format.md §3.8: Jackson class names, row ids as flightId for APPT and HNAG,
// all three HNAG keys, the DELY duration as HH×24+MM, one schedule per message and no delete
// for the flight the second snapshot drops. They are equal; changing one field in the legacy
// capture is reported as the one mismatch, with exit code 1.
func TestShadowDiffAgainstTheLegacyShape(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		rdb := redisForE2E(t)
		channel := fmt.Sprintf("msgx:test:e2e:%s:%d:FLOP-msgx", db.Name, time.Now().UnixNano())
		cfgPath := filepath.Join(t.TempDir(), "msgx.yaml")
		cfg := fmt.Sprintf(`targets:
  KAFKA_FLOP: {sink: file}
  KAFKA_SCHD: {sink: file}
  REDIS_NOTIFY: {sink: file}
  ES_FLIGHT: {sink: file}
  LEGACY_FLOP: {sink: redis, format: legacy, copy-of: REDIS_NOTIFY, addr: "127.0.0.1:6379", channel: %q}
`, channel)
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		sub := rdb.Subscribe(context.Background(), channel)
		defer sub.Close()
		if _, err := sub.Receive(context.Background()); err != nil {
			t.Fatal(err)
		}
		received := sub.Channel()

		day := tomorrow(t)
		at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
		s := db.start(t, "MSGX_CONFIG="+cfgPath, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
		dep := e2eFltr(92001, "CA1301", "D", at(10, 0), "")
		arr := e2eFltr(92002, "CA1302", "A", at(11, 0), "")
		dropped := e2eFltr(92003, "CA1303", "A", at(10, 30), "") // inside the second snapshot's window
		var ids []int64
		for _, body := range []string{
			e2eSchd(820001, dep, arr, dropped),
			e2eFlop(820002, "APPT", 92001, "<APPT>"+sisTime(at(9, 40))+"</APPT>"),
			e2eFlop(820003, "CTOT", 92001, "<CTOT>"+sisTime(at(10, 12))+"</CTOT>"),
			e2eFlop(820004, "HNAG", 92002, "<FHAG>1001</FHAG><PHAG>1002</PHAG>"),
			e2eFlop(820005, "DELY", 92002, `<DELY CODE="WX" STRT="`+sisTime(at(10, 30))+`" DURA="0130">thunder</DELY>`),
			e2eFlop(820006, "STND", 92002, "<STND>231</STND>"),
			e2eSchd(820007, dep, arr),
		} {
			ids = append(ids, s.post(body))
		}
		for _, id := range ids {
			s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		}
		deadline := time.Now().Add(20 * time.Second)
		for len(s.events("target=LEGACY_FLOP&state=PENDING")) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("LEGACY_FLOP events still pending\n%s", s.logs)
			}
			time.Sleep(50 * time.Millisecond)
		}
		// Everything msgx published came before this marker.
		const marker = `{"marker":true}`
		rdb.Publish(context.Background(), channel, marker)
		var msgxLines []string
		timeout := time.After(20 * time.Second)
	read:
		for {
			select {
			case m := <-received:
				if m.Payload == marker {
					break read
				}
				msgxLines = append(msgxLines, m.Payload)
			case <-timeout:
				t.Fatalf("no marker; received %v", msgxLines)
			}
		}
		dir := t.TempDir()
		msgxFile := filepath.Join(dir, "msgx.jsonl")
		os.WriteFile(msgxFile, []byte(strings.Join(msgxLines, "\n")+"\n"), 0o644)

		ms := func(tm time.Time) string { return fmt.Sprintf(`["java.util.Date",%d]`, tm.UnixMilli()) }
		// The legacy's own payloads, in its typed JSON (docs/sis-format.md, "The legacy FLOP
		// notification"); flightId is its database row id where docs/sis-format.md §3.8 says so.
		const cls = `"@class":"com.unisys.aos.view.viewentity.dto.FlightNotificationDTO"`
		update := func(flightID int64, fields string) string {
			return fmt.Sprintf(`{%s,"type":"UPDATE","updatedFields":{"@class":"java.util.HashMap",%s},"flightId":%d,"flights":null,"scheduleStart":null,"scheduleEnd":null,"createTime":%s}`,
				cls, fields, flightID, ms(at(0, 0)))
		}
		flight := func(row, flid int64) string {
			return fmt.Sprintf(`{"@class":"com.unisys.aos.view.viewentity.dto.FlightDTO","flight":{"@class":"com.unisys.aos.view.viewentity.entity.flight.FmsFlight","id":%d,"aodbId":%d}}`, row, flid)
		}
		schedule := func(flights ...string) string {
			return fmt.Sprintf(`{%s,"type":"SCHEDULE","updatedFields":null,"flightId":null,"flights":["java.util.ArrayList",[%s]],"scheduleStart":%s,"scheduleEnd":%s,"createTime":%s}`,
				cls, strings.Join(flights, ","), ms(at(10, 0)), ms(at(12, 0)), ms(at(0, 0)))
		}
		legacy := []string{
			schedule(flight(601, 92001), flight(602, 92002), flight(603, 92003)),
			update(601, `"approvedTime":`+ms(at(9, 40))),
			update(92001, `"ctotCode":`+ms(at(10, 12))),
			update(602, `"fieldAgent":1001,"maintenanceAgent":null,"passengerAgent":1002`),
			update(92002, `"delays":["java.util.ArrayList",[{"@class":"com.unisys.aos.view.viewentity.entity.flight.FmsDelay","flightId":92002,"delayCode":"WX","duration":54,"startTime":`+ms(at(10, 30))+`,"comments":"thunder"}]]`),
			update(92002, `"currentStandCode":"231"`),
			schedule(flight(601, 92001), flight(602, 92002)),
		}
		legacyFile := filepath.Join(dir, "legacy.jsonl")
		os.WriteFile(legacyFile, []byte(strings.Join(legacy, "\n")+"\n"), 0o644)
		for _, l := range legacy {
			if !json.Valid([]byte(l)) {
				t.Fatalf("the legacy capture is not JSON: %s", l)
			}
		}

		out, err := db.command(t, "shadow", "diff", "--legacy", legacyFile, "--msgx", msgxFile).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "result: EQUAL") {
			t.Fatalf("shadow diff: %v\n%s\nmsgx published:\n%s", err, out, strings.Join(msgxLines, "\n"))
		}
		for _, want := range []string{"[row-id] applied 2×", "[group-keys] applied 1×", "[dely-duration] applied 1×", "[snapshot-drop] applied 1×",
			"flight 92001: match (approvedTime, ctotCode, schedule)", "flight 92003: match (schedule); explained by snapshot-drop"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("shadow diff output lacks %q:\n%s", want, out)
			}
		}

		// One field changed on the legacy side: the one difference, exit code 1.
		legacy[5] = update(92002, `"currentStandCode":"232"`)
		os.WriteFile(legacyFile, []byte(strings.Join(legacy, "\n")+"\n"), 0o644)
		out, err = db.command(t, "shadow", "diff", "--legacy", legacyFile, "--msgx", msgxFile).CombinedOutput()
		exit, ok := err.(*exec.ExitError)
		if !ok || exit.ExitCode() != 1 {
			t.Fatalf("shadow diff with a changed field: %v, want exit code 1\n%s", err, out)
		}
		if !strings.Contains(string(out), `MISMATCH currentStandCode: legacy "232", msgx "231"`) || !strings.Contains(string(out), "1 differences") {
			t.Errorf("shadow diff output:\n%s", out)
		}
	})
}

// TestShadowDiffListensToChannels: `msgx shadow diff` subscribes to the legacy's channel and
// msgx's for --for, keeps what they carried (--save-legacy, --save-msgx) and compares it. The
// test publishes the captures of testdata/shadow once the command says it is listening.
func TestShadowDiffListensToChannels(t *testing.T) {
	t.Parallel()
	rdb := redisForE2E(t)
	prefix := fmt.Sprintf("msgx:test:e2e:%d:", time.Now().UnixNano())
	dir := t.TempDir()
	cmd := exec.Command(binary, "shadow", "diff", "--legacy-channel", prefix+"FLOP", "--msgx-channel", prefix+"FLOP-msgx",
		"--for", "8s", "--save-legacy", filepath.Join(dir, "legacy.jsonl"), "--save-msgx", filepath.Join(dir, "msgx.jsonl"))
	var stdout syncBuffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening on ") {
		t.Fatalf("first line %q, %v", line, err)
	}
	published := map[string]string{}
	for name, channel := range map[string]string{"legacy.jsonl": prefix + "FLOP", "msgx.jsonl": prefix + "FLOP-msgx"} {
		b, err := os.ReadFile(filepath.Join("../../testdata/shadow", name))
		if err != nil {
			t.Fatal(err)
		}
		published[name] = string(b)
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if err := rdb.Publish(context.Background(), channel, l).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	go io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("shadow diff: %v\n%s", err, stdout.String())
	}
	if !strings.Contains(stdout.String(), "result: EQUAL: 4 flights match") {
		t.Errorf("output:\n%s", stdout.String())
	}
	for name, want := range published {
		got, _ := os.ReadFile(filepath.Join(dir, name))
		if string(got) != want {
			t.Errorf("saved %s:\n%s\nwant:\n%s", name, got, want)
		}
	}
}

// TestShadowDiffWithoutLegacyIDs: two flights given the same APPT and BOTM (STYPs whose legacy
// flightId is a row id), compared without --legacy-ids through the binary. Two identical
// captures are EQUAL with exit code 0; the legacy's row ids 501 and 502 are placed by the order
// of changes and a real difference is still the one difference (exit 1); a legacy APPT that
// either flight could have sent, with nothing else telling which, makes the result UNDECIDED,
// exit code 6.
func TestShadowDiffWithoutLegacyIDs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	note := func(flightID int64, key string, ms int64) string {
		return fmt.Sprintf(`{"type":"update","flightId":%d,"updatedFields":{%q:%d},"flights":null,"scheduleStart":null,"scheduleEnd":null,"createTime":1773536400000}`,
			flightID, key, ms)
	}
	write := func(name string, lines ...string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const appt, botm = 1773627120000, 1773627720000
	msgx := write("msgx.jsonl", note(7001, "approvedTime", appt), note(7002, "approvedTime", appt),
		note(7001, "boardingTime", botm), note(7002, "boardingTime", botm))
	diff := func(legacy, msgx string, wantCode int, want ...string) {
		t.Helper()
		out, err := exec.Command(binary, "shadow", "diff", "--legacy", legacy, "--msgx", msgx).CombinedOutput()
		code := 0
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != wantCode {
			t.Errorf("exit code %d, want %d\n%s", code, wantCode, out)
		}
		for _, w := range want {
			if !strings.Contains(string(out), w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
	}
	diff(msgx, msgx, 0, "flight 7001: match (approvedTime, boardingTime)", "flight 7002: match (approvedTime, boardingTime)",
		"result: EQUAL: 2 flights match, 0 differ, 0 undecided, 0 differences, 0 unresolved, 0 ambiguous")

	legacy := write("legacy.jsonl", note(501, "approvedTime", appt), note(502, "approvedTime", appt),
		note(501, "boardingTime", botm), note(502, "boardingTime", botm+60000))
	diff(legacy, msgx, 1, "4 row ids mapped", "flight 7001: match (approvedTime, boardingTime); explained by row-id",
		`MISMATCH boardingTime: legacy "2026-03-16T02:23:00Z", msgx "2026-03-16T02:22:00Z"`, "result: DIFFERENT", "1 differences")

	// The legacy row 501's BOTM would tell which flight it is; without it, it cannot be told.
	legacy = write("legacy.jsonl", note(501, "approvedTime", appt))
	msgx = write("msgx-appt.jsonl", note(7001, "approvedTime", appt), note(7002, "approvedTime", appt))
	diff(legacy, msgx, 6, "AMBIGUOUS legacy line 1: APPT approvedTime with row id 501 as flightId could be msgx flight [7001 7002]",
		"give --legacy-ids", "UNDECIDED ONLY MSGX approvedTime", "result: UNDECIDED")
}
