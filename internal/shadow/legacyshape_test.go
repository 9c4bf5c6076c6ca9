package shadow

import (
	"encoding/json"
	"testing"
	"time"

	"msgx/internal/legacyflop"
)

// TestParseReadsTheLegacyTypedShape: what format legacy publishes (the legacy's typed JSON:
// enum constants, Dates, FlightDTO flights, entity groups) reads back as the notification it is.
func TestParseReadsTheLegacyTypedShape(t *testing.T) {
	start, end := int64(1773617400000), int64(1773676500000)
	id := int64(7001)
	fields, err := legacyflop.UpdatedFields(id, "DELY", map[string]json.RawMessage{"DELY": json.RawMessage(`[{"CODE":"WX","DURA":105,"STRT":"2026-03-15T02:30:00Z"}]`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n    legacyflop.Notification
		test func(Note) bool
	}{
		{legacyflop.Notification{Type: "schedule", Flights: []int64{7101, 7102}, ScheduleStart: &start, ScheduleEnd: &end, CreateTime: 1},
			func(n Note) bool {
				return n.Type == "schedule" && len(n.Flights) == 2 && n.Flights[1] == 7102 && n.ScheduleEnd.Equal(time.UnixMilli(end))
			}},
		{legacyflop.Notification{Type: "update", FlightID: &id, UpdatedFields: fields, CreateTime: 1},
			func(n Note) bool {
				d, ok := n.Fields["delays"].([]any)
				return n.Type == "update" && *n.FlightID == 7001 && ok && len(d) == 1 &&
					d[0].(map[string]any)["duration"] == int64(105) && d[0].(map[string]any)["delayCode"] == "WX"
			}},
		{legacyflop.Notification{Type: "delete", FlightID: &id, CreateTime: 1},
			func(n Note) bool { return n.Type == "delete" && *n.FlightID == 7001 }},
	} {
		b, err := c.n.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse(b, time.UTC)
		if err != nil || !c.test(got) {
			t.Errorf("Parse(%s) = %+v, %v", b, got, err)
		}
	}
}
