package legacyflop

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"msgx/internal/sis"
)

var update = flag.Bool("update", false, "rewrite testdata/legacy/*.golden.json")

// inputs reads testdata/legacy/notify_in.json: per type tag, the notify payloads msgx's
// handlers emit for the sample message of that tag (taken from testdata/decisions, and for the
// samples that change nothing against the handlers' base state, written to payloads.md).
func inputs(t *testing.T) map[string][]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile("../../testdata/legacy/notify_in.json")
	if err != nil {
		t.Fatal(err)
	}
	var in map[string][]json.RawMessage
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// envelope wraps a notify payload as the dispatcher delivers it.
func envelope(tag string, msgID int64, payload json.RawMessage) []byte {
	return fmt.Appendf(nil, `{"event_id":%d,"msg_id":%d,"type_tag":%q,"target":"REDIS_NOTIFY","kind":"notify","created_at":"2026-03-15T01:00:00.123456Z","payload":%s}`,
		msgID*10, msgID, tag, payload)
}

// convertAll converts the payloads of one tag; a notification per payload that has one.
func convertAll(t *testing.T, tag string, payloads []json.RawMessage) []json.RawMessage {
	t.Helper()
	out := []json.RawMessage{}
	for i, p := range payloads {
		e, err := ParseEvent(envelope(tag, int64(100+i), p))
		if err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
		n, ok, err := Convert(e)
		if err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
		if !ok {
			continue
		}
		b, err := n.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestGoldenLegacyNotifications converts msgx's notify event of every FLOP STYP's sample (and
// of SCHD RESP, ADFT and DEL) and compares it with testdata/legacy/<tag>.golden.json.
func TestGoldenLegacyNotifications(t *testing.T) {
	in := inputs(t)
	for _, styp := range sis.FlopSTYPs() {
		if _, ok := in["FLOP-"+styp]; !ok {
			t.Errorf("testdata/legacy/notify_in.json has no FLOP-%s", styp)
		}
	}
	tags := make([]string, 0, len(in))
	for tag := range in {
		tags = append(tags, tag)
	}
	sort.Strings(tags)
	for _, tag := range tags {
		t.Run(tag, func(t *testing.T) {
			got := convertAll(t, tag, in[tag])
			var buf bytes.Buffer
			buf.WriteString("[\n")
			for i, n := range got {
				var ind bytes.Buffer
				json.Indent(&ind, n, "  ", "  ")
				buf.WriteString("  ")
				buf.Write(ind.Bytes())
				if i < len(got)-1 {
					buf.WriteString(",")
				}
				buf.WriteString("\n")
			}
			buf.WriteString("]\n")
			path := filepath.Join("../../testdata/legacy", strings.ToLower(strings.ReplaceAll(tag, "-", "_"))+".golden.json")
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/legacyflop -run Golden -update)", err)
			}
			if !bytes.Equal(want, buf.Bytes()) {
				t.Errorf("%s differs from its golden file:\n--- got\n%s--- want\n%s", tag, buf.Bytes(), want)
			}
		})
	}
}

// section38 is docs/sis-format.md §3.8's key list, written out here apart from the converter's tables:
// every update notification of a FLOP STYP must carry exactly these keys (a group STYP's
// keys all at once where msgx changed them all; see TestEveryKeyOfAGroupAppears).
var section38 = map[string]string{
	"ACFT": "aircraftTypeCode", "APPT": "approvedTime", "BOTM": "boardingTime", "CNCL": "cancellationTime",
	"EGSR": "engineStartRequest", "EGST": "engineStartTime", "FINT": "finalTim", "LACL": "lastCallTime",
	"COBT": "cobtCode", "CTOT": "ctotCode", "EOBT": "eobtCode", "IEST": "iestCode", "TOBT": "tobtCode",
	"PEDT": "pedtCode", "PADT": "padtCode", "NEAT": "neatCode", "NAAT": "naatCode",
	"PORT": "portOpenTime portCloseTime", "RUNW": "logicalRunwayCode", "STND": "currentStandCode",
	"TRML": "terminalCode", "MAXP": "maxPaxCode", "RENO": "registrationCode", "REMC": "remarksCode",
	"FLIN": "flightIndicatorCode", "FLTY": "flightTypeCode", "FTSS": "statusCodeCode",
	"EXSS": "externalStatusCode externalStatusComment", "FDIV": "divAirport divDirection divReason",
	"FRET": "returnReason returnType", "FLAB": "landingAbortIndicator landingAbortReason",
	"HNAG": "fieldAgent maintenanceAgent passengerAgent",
	"TAOP": "turnaroundOperator turnaroundFlightNumber turnaroundFlightId", "VIPP": "vipCount vipFlag",
	"ABTM": "airbridges", "CHDT": "chutes", "CHOT": "chocks", "CKDT": "checkinDesks", "CLDT": "carousels",
	"GTDT": "gates", "PSDT": "stands", "DELY": "delays", "ERUT": "entireRoute", "SRVT": "services",
	"PSHT": "standPushTime", "TIPT": "standTractorTime", "VIPF": "",
	"FDEL": "", // a delete, and an update of the master's code-share list (§3.6)
}

func TestKeysOfEverySTYP(t *testing.T) {
	in := inputs(t)
	for _, styp := range sis.FlopSTYPs() {
		tag := "FLOP-" + styp
		want := strings.Fields(section38[styp])
		if _, listed := section38[styp]; !listed {
			t.Errorf("%s: not in §3.8's list", styp)
		}
		if got := Keys[styp]; !sameSet(got, want) {
			t.Errorf("Keys[%s] = %v, docs/sis-format.md §3.8 says %v", styp, got, want)
		}
		for _, raw := range convertAll(t, tag, in[tag]) {
			n, err := consume(raw)
			if err != nil {
				t.Fatal(err)
			}
			if n["type"] != "UPDATE" {
				continue
			}
			fields := n["updatedFields"].(map[string]any)
			delete(fields, "@class")
			if _, cs := fields[CodeShareKey]; cs && len(fields) == 1 {
				continue // a code-share master's list, whatever the STYP
			}
			for k := range fields {
				if !slices.Contains(want, k) {
					t.Errorf("%s: key %s is not one of §3.8's %v", tag, k, want)
				}
			}
			if len(want) == 0 {
				t.Errorf("%s: a notification, but the legacy sends none: %s", tag, raw)
			}
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestEveryKeyOfAGroupAppears: an attribute-and-text element (FDIV) is one field in msgx's
// record, so all its legacy keys appear, cleared ones as null.
func TestEveryKeyOfAGroupAppears(t *testing.T) {
	got, err := UpdatedFields(7001, "FDIV", map[string]json.RawMessage{"FDIV": json.RawMessage("null")})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || string(got["divAirport"]) != "null" || string(got["divReason"]) != "null" {
		t.Errorf("FDIV cleared = %s", got)
	}
	got, _ = UpdatedFields(7001, "PORT", map[string]json.RawMessage{"PORT": json.RawMessage(`[{"POID":"C","POTM":"2026-03-15T01:40:00Z"}]`)})
	if string(got["portCloseTime"]) != `["java.util.Date",1773538800000]` || string(got["portOpenTime"]) != "null" {
		t.Errorf("PORT close = %s", got)
	}
}

func TestFlightIDIsTheFLIDAndTimesAreDates(t *testing.T) {
	e, err := ParseEvent(envelope("FLOP-APPT", 5, json.RawMessage(`{"type":"update","FLID":7001,"updatedFields":{"APPT":"2026-03-15T02:12:00Z"}}`)))
	if err != nil {
		t.Fatal(err)
	}
	n, ok, err := Convert(e)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	want := time.Date(2026, 3, 15, 2, 12, 0, 0, time.UTC).UnixMilli()
	if *n.FlightID != 7001 || string(n.UpdatedFields["approvedTime"]) != fmt.Sprintf(`["java.util.Date",%d]`, want) {
		t.Errorf("got %+v %s", n, n.UpdatedFields)
	}
	if n.CreateTime != time.Date(2026, 3, 15, 1, 0, 0, 123456000, time.UTC).UnixMilli() {
		t.Errorf("createTime %d", n.CreateTime)
	}
}

func TestParseEventRefusesOtherKinds(t *testing.T) {
	_, err := ParseEvent([]byte(`{"kind":"flop","payload":{}}`))
	if err == nil || !strings.Contains(err.Error(), "notify") {
		t.Errorf("err = %v", err)
	}
	if _, err := ParseEvent([]byte(`not json`)); err == nil {
		t.Error("no error for a value that is not JSON")
	}
}

func TestMergeSchedules(t *testing.T) {
	s, e := int64(1), int64(2)
	a := Notification{Type: TypeSchedule, Flights: []int64{1}, ScheduleStart: &s, ScheduleEnd: &e}
	b := Notification{Type: TypeSchedule, Flights: []int64{2}, ScheduleStart: &s, ScheduleEnd: &e}
	if Merge(&a, 1, b, 2) {
		t.Error("merged notifications of two messages")
	}
	if !Merge(&a, 1, b, 1) || !slices.Equal(a.Flights, []int64{1, 2}) {
		t.Errorf("not merged: %v", a.Flights)
	}
	d := Notification{Type: TypeDelete}
	if Merge(&a, 1, d, 1) {
		t.Error("merged a delete into a schedule")
	}
}

func TestIsTimeKey(t *testing.T) {
	for _, k := range []string{"approvedTime", "ctotCode", "naatCode", "STST", "createTime", "finalTim"} {
		if !IsTimeKey(k) {
			t.Errorf("IsTimeKey(%s) = false", k)
		}
	}
	for _, k := range []string{"maxPaxCode", "aircraftTypeCode", "PSST", "gates", "acftCode"} {
		if IsTimeKey(k) {
			t.Errorf("IsTimeKey(%s) = true", k)
		}
	}
}

// TestTypedShapeFieldByField checks, through the consumer's deserialisation, each part of the
// three notification types: the class names, the enum constant, the Dates, the FLID, a group
// as entity objects, a list of strings as an ArrayList and a number beyond an int as a Long.
func TestTypedShapeFieldByField(t *testing.T) {
	conv := func(tag, payload string) map[string]any {
		t.Helper()
		e, err := ParseEvent(envelope(tag, 5, json.RawMessage(payload)))
		if err != nil {
			t.Fatal(err)
		}
		n, ok, err := Convert(e)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		b, err := n.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		got, err := consume(b)
		if err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		return got
	}
	created := javaDate(time.Date(2026, 3, 15, 1, 0, 0, 123456000, time.UTC).UnixMilli())
	ms := func(s string) javaDate {
		tm, _ := time.Parse(time.RFC3339, s)
		return javaDate(tm.UnixMilli())
	}

	u := conv("FLOP-CHOT", `{"type":"update","FLID":7001,"updatedFields":{"CHOT":[{"CSNO":1,"CHTM":"2026-03-15T02:05:00Z","CHID":"ON","CHST":"213"}]}}`)
	if u["@class"] != ClassNotification || u["type"] != "UPDATE" || u["flightId"] != json.Number("7001") ||
		u["flights"] != nil || u["scheduleStart"] != nil || u["createTime"] != created {
		t.Errorf("update: %v", u)
	}
	f := u["updatedFields"].(map[string]any)
	chock := f["chocks"].([]any)[0].(map[string]any)
	if f["@class"] != ClassHashMap || len(f) != 2 || chock["@class"] != EntityPackage+"FmsChock" ||
		chock["flightId"] != json.Number("7001") || chock["sequenceNumber"] != json.Number("1") ||
		chock["chockTime"] != ms("2026-03-15T02:05:00Z") || chock["chockIndicator"] != "ON" || chock["standCode"] != "213" || len(chock) != 6 {
		t.Errorf("update fields: %v", f)
	}

	c := conv("FLOP-CTOT", `{"type":"update","FLID":7001,"updatedFields":{"CTOT":"2026-03-15T04:40:00Z","CSFL":["CA101","MU202"],"TAID":3000000000}}`)
	f = c["updatedFields"].(map[string]any)
	if f["ctotCode"] != ms("2026-03-15T04:40:00Z") || !slices.Equal(f[CodeShareKey].([]any), []any{"CA101", "MU202"}) ||
		f["turnaroundFlightId"] != json.Number("3000000000") {
		t.Errorf("time, list and long: %v", f)
	}
	if got := c["updatedFields"]; got == nil {
		t.Error("no updatedFields")
	}

	d := conv("FLOP-FDEL", `{"type":"delete","FLID":7003}`)
	if d["type"] != "DELETE" || d["flightId"] != json.Number("7003") || d["updatedFields"] != nil || d["createTime"] != created {
		t.Errorf("delete: %v", d)
	}

	s := conv("SCHD-DNLD", `{"type":"schedule","FLID":7101,"scheduleStart":"2026-03-15T23:30:00Z","scheduleEnd":"2026-03-16T15:55:00Z"}`)
	fl := s["flights"].([]any)
	dto := fl[0].(map[string]any)
	ff := dto["flight"].(map[string]any)
	if s["type"] != "SCHEDULE" || s["flightId"] != nil || len(fl) != 1 || dto["@class"] != ClassFlightDTO ||
		ff["@class"] != ClassFmsFlight || ff["aodbId"] != json.Number("7101") ||
		s["scheduleStart"] != ms("2026-03-15T23:30:00Z") || s["scheduleEnd"] != ms("2026-03-16T15:55:00Z") {
		t.Errorf("schedule: %v", s)
	}
}

// TestEveryGroupPartHasALegacyProperty: each part msgx keeps in a group entry has the legacy
// entity property it goes to, so no part is left out of the consumer's objects.
func TestEveryGroupPartHasALegacyProperty(t *testing.T) {
	for field, typ := range map[string]any{"ABTM": sis.AirbridgeOp{}, "CHDT": sis.ChuteAlloc{}, "CHOT": sis.Chocks{},
		"CKDT": sis.CounterAlloc{}, "CLDT": sis.BeltAlloc{}, "GTDT": sis.GateAlloc{}, "PSDT": sis.StandAlloc{},
		"DELY": sis.Delay{}, "ERUT": sis.RouteStop{}, "SRVT": sis.Service{}} {
		rt := reflect.TypeOf(typ)
		for i := range rt.NumField() {
			part, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if !slices.ContainsFunc(entities[field].props, func(p prop) bool { return p.part == part }) {
				t.Errorf("%s: part %s has no property of %s", field, part, entities[field].class)
			}
		}
	}
}

func TestUpdatedFieldsRefusesWhatItCannotShape(t *testing.T) {
	for _, c := range []struct{ field, value, want string }{
		{"CHOT", `[{"CSNO":1,"XXXX":"1"}]`, "part XXXX has no property"},
		{"CHOT", `[{"CSNO":1,"CHTM":"15MAR260205"}]`, "not RFC 3339"},
		{"CTOT", `"soon"`, "not RFC 3339"},
		{"GTDT", `{"GTNO":1}`, "a group"},
	} {
		_, err := UpdatedFields(7001, c.field, map[string]json.RawMessage{c.field: json.RawMessage(c.value)})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s %s: err = %v, want %q", c.field, c.value, err, c.want)
		}
	}
}
