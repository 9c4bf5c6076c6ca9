package target

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
	"msgx/internal/targetconf"
)

// legacyInputs reads testdata/legacy/notify_in.json (msgx's notify payloads per type tag) and
// returns, per tag, the records the dispatcher would hand a copy-of REDIS_NOTIFY target and
// the notifications testdata/legacy/<tag>.golden.json says the legacy format publishes.
func legacyInputs(t *testing.T) (tags []string, recs map[string][]Record, want map[string][]string) {
	t.Helper()
	b, err := os.ReadFile("../../testdata/legacy/notify_in.json")
	if err != nil {
		t.Fatal(err)
	}
	var in map[string][]json.RawMessage
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	recs, want = map[string][]Record{}, map[string][]string{}
	for tag, payloads := range in {
		tags = append(tags, tag)
		for i, p := range payloads {
			msg := int64(100 + i) // as the golden test numbers them
			recs[tag] = append(recs[tag], Record{
				EventID: msg * 10, MsgID: msg, TypeTag: tag, Target: "LEGACY_FLOP", Kind: "notify",
				Value: fmt.Appendf(nil, `{"event_id":%d,"msg_id":%d,"type_tag":%q,"target":"REDIS_NOTIFY","kind":"notify","created_at":"2026-03-15T01:00:00.123456Z","payload":%s}`, msg*10, msg, tag, p),
			})
		}
		g, err := os.ReadFile(filepath.Join("../../testdata/legacy", strings.ToLower(strings.ReplaceAll(tag, "-", "_"))+".golden.json"))
		if err != nil {
			t.Fatal(err)
		}
		var list []json.RawMessage
		if err := json.Unmarshal(g, &list); err != nil {
			t.Fatal(err)
		}
		for _, n := range list {
			var c bytes.Buffer
			json.Compact(&c, n)
			want[tag] = append(want[tag], c.String())
		}
	}
	sort.Strings(tags)
	return tags, recs, want
}

// subscribe subscribes to a channel of the test's own and returns the message channel.
func subscribe(t *testing.T, rdb *redis.Client) (string, <-chan *redis.Message) {
	t.Helper()
	ctx := context.Background()
	channel := fmt.Sprintf("msgx:test:%s:%d:FLOP", t.Name(), time.Now().UnixNano())
	sub := rdb.Subscribe(ctx, channel)
	t.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	return channel, sub.Channel()
}

func receive(t *testing.T, msgs <-chan *redis.Message, n int) []string {
	t.Helper()
	var got []string
	timeout := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case m := <-msgs:
			got = append(got, m.Payload)
		case <-timeout:
			t.Fatalf("received %d of %d notifications: %v", len(got), n, got)
		}
	}
	select {
	case m := <-msgs:
		t.Fatalf("an extra notification: %s", m.Payload)
	case <-time.After(100 * time.Millisecond):
	}
	return got
}

// TestRedisLegacyFormatEverySTYP publishes, through a format-legacy target on real Redis, the
// notify events of every FLOP STYP's sample and of schedules (SCHD RESP, ADFT, DEL), and
// checks that a subscriber receives exactly the golden legacy notifications.
func TestRedisLegacyFormatEverySTYP(t *testing.T) {
	rdb := redisOrSkip(t)
	tags, recs, want := legacyInputs(t)
	for _, styp := range sis.FlopSTYPs() {
		if _, ok := recs["FLOP-"+styp]; !ok {
			t.Errorf("no sample of FLOP-%s", styp)
		}
	}
	if len(recs["SCHD-RESP"]) == 0 {
		t.Fatal("no schedule sample")
	}
	channel, msgs := subscribe(t, rdb)
	s := mustOpen(t, "LEGACY_FLOP", Config{Sink: targetconf.SinkRedis, Format: targetconf.FormatLegacy, CopyOf: "REDIS_NOTIFY", Addr: testRedisAddr, Channel: channel})
	ctx := context.Background()
	for _, tag := range tags {
		n, err := s.Send(ctx, recs[tag])
		if err != nil || n != len(recs[tag]) {
			t.Fatalf("%s: Send = %d, %v; want %d", tag, n, err, len(recs[tag]))
		}
		got := receive(t, msgs, len(want[tag]))
		for i := range got {
			if got[i] != want[tag][i] {
				t.Errorf("%s: notification %d\n got  %s\n want %s", tag, i, got[i], want[tag][i])
			}
		}
		for _, g := range got {
			var wrapped [2]json.RawMessage // ["class", {…}]
			var n struct {
				Type     string `json:"type"`
				FlightID *int64 `json:"flightId"`
			}
			if err := json.Unmarshal([]byte(g), &wrapped); err != nil {
				t.Fatalf("%s: %v: %s", tag, err, g)
			}
			if err := json.Unmarshal(wrapped[1], &n); err != nil || n.Type == "" {
				t.Fatalf("%s: %v: %s", tag, err, g)
			}
			if n.Type != "SCHEDULE" && n.FlightID == nil {
				t.Errorf("%s: %s has no flightId", tag, g)
			}
		}
	}
}

// TestRedisLegacyScheduleIsOneNotification: the schedule events of one snapshot message sent
// together become one notification naming every flight, as the legacy sends one per message.
func TestRedisLegacyScheduleIsOneNotification(t *testing.T) {
	rdb := redisOrSkip(t)
	channel, msgs := subscribe(t, rdb)
	s := mustOpen(t, "REDIS_NOTIFY", Config{Sink: targetconf.SinkRedis, Format: targetconf.FormatLegacy, Addr: testRedisAddr, Channel: channel})
	var recs []Record
	for i, p := range []string{
		`{"type":"schedule","FLID":7101,"scheduleStart":"2026-03-15T23:30:00Z","scheduleEnd":"2026-03-16T15:55:00Z"}`,
		`{"type":"schedule","FLID":7102,"scheduleStart":"2026-03-15T23:30:00Z","scheduleEnd":"2026-03-16T15:55:00Z"}`,
		`{"type":"delete","FLID":7004}`,
		`{"type":"schedule","FLID":7103,"scheduleStart":"2026-03-15T23:30:00Z","scheduleEnd":"2026-03-16T15:55:00Z"}`,
	} {
		recs = append(recs, Record{EventID: int64(i + 1), MsgID: 9, TypeTag: "SCHD-DNLD", Kind: "notify",
			Value: fmt.Appendf(nil, `{"event_id":%d,"msg_id":9,"type_tag":"SCHD-DNLD","target":"REDIS_NOTIFY","kind":"notify","created_at":"2026-03-15T01:00:00Z","payload":%s}`, i+1, p)})
	}
	if n, err := s.Send(context.Background(), recs); err != nil || n != 4 {
		t.Fatalf("Send = %d, %v", n, err)
	}
	got := receive(t, msgs, 3)
	const (
		cls     = `["com.unisys.aos.view.viewentity.dto.FlightNotificationDTO",{`
		win     = `"scheduleStart":["java.util.Date",1773617400000],"scheduleEnd":["java.util.Date",1773676500000],"createTime":["java.util.Date",1773536400000]}]`
		flight  = `["com.unisys.aos.view.viewentity.dto.FlightDTO",{"flight":["com.unisys.aos.view.viewentity.entity.flight.FmsFlight",{"aodbId":%d}]}]`
		flights = `"flights":["java.util.ArrayList",[%s]],`
	)
	want := []string{
		cls + `"type":"SCHEDULE","updatedFields":null,"flightId":null,` + fmt.Sprintf(flights, fmt.Sprintf(flight, 7101)+","+fmt.Sprintf(flight, 7102)) + win,
		cls + `"type":"DELETE","updatedFields":null,"flightId":7004,"flights":null,"scheduleStart":null,"scheduleEnd":null,"createTime":["java.util.Date",1773536400000]}]`,
		cls + `"type":"SCHEDULE","updatedFields":null,"flightId":null,` + fmt.Sprintf(flights, fmt.Sprintf(flight, 7103)) + win,
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("notification %d\n got  %s\n want %s", i, got[i], want[i])
		}
	}
}

// TestRedisLegacyRejectsOtherEvents: a record that is not a notify event (a misconfigured
// copy-of) is REJECTED, after the records before it were published.
func TestRedisLegacyRejectsOtherEvents(t *testing.T) {
	rdb := redisOrSkip(t)
	channel, msgs := subscribe(t, rdb)
	s := mustOpen(t, "REDIS_NOTIFY", Config{Sink: targetconf.SinkRedis, Format: targetconf.FormatLegacy, Addr: testRedisAddr, Channel: channel})
	recs := []Record{
		{EventID: 1, MsgID: 1, Value: []byte(`{"event_id":1,"msg_id":1,"type_tag":"FLOP-ACFT","kind":"notify","created_at":"2026-03-15T01:00:00Z","payload":{"type":"update","FLID":7001,"updatedFields":{"ACFT":"320"}}}`)},
		{EventID: 2, MsgID: 1, Value: []byte(`{"event_id":2,"msg_id":1,"type_tag":"FLOP-ACFT","kind":"flop","created_at":"2026-03-15T01:00:00Z","payload":{}}`)},
	}
	n, err := s.Send(context.Background(), recs)
	var pe *pipeline.Error
	if n != 1 || !errors.As(err, &pe) || pe.Class != pipeline.Rejected || !strings.Contains(err.Error(), "event 2") {
		t.Fatalf("Send = %d, %v; want 1 and a REJECTED error for event 2", n, err)
	}
	if got := receive(t, msgs, 1); !strings.Contains(got[0], `"aircraftTypeCode":"320"`) {
		t.Errorf("published %s", got[0])
	}
}

func TestLegacyFormatConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"REDIS_NOTIFY", Config{Sink: targetconf.SinkRedis, Format: targetconf.FormatLegacy}, ""},
		{"LEGACY", Config{Sink: targetconf.SinkRedis, Format: targetconf.FormatLegacy, CopyOf: "REDIS_NOTIFY"}, ""},
		{"LEGACY", Config{Sink: targetconf.SinkRedis, Format: targetconf.FormatLegacy, CopyOf: "KAFKA_FLOP"}, "targets.LEGACY.format"},
		{"REDIS_NOTIFY", Config{Sink: targetconf.SinkRedis, Format: "jackson"}, "targets.REDIS_NOTIFY.format"},
		{"REDIS_NOTIFY", Config{Sink: targetconf.SinkRedis}, "targets.REDIS_NOTIFY.channel"},
		{"W", Config{Sink: targetconf.SinkWebhook, URL: "http://x", Secret: "s", Format: targetconf.FormatLegacy}, "targets.W.format"},
	} {
		err := c.cfg.Validate(c.name)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s %+v: %v, want %q", c.name, c.cfg, err, c.want)
		}
	}
	if got := withDefaults(Config{Sink: targetconf.SinkRedis, Format: targetconf.FormatLegacy}, "REDIS_NOTIFY", "").Channel; got != "FLOP" {
		t.Errorf("default channel %q, want FLOP", got)
	}
}
