// Package legacyflop is the notification the legacy web-socket service reads from the Redis
// channel FLOP (docs/sis-format.md §3.8): its shape, the legacy's updatedFields keys per FLOP STYP, and
// the conversion from msgx's own notify events (handler.TargetNotify) into that shape. The
// Redis sink publishes it for a target with `format: legacy`; `msgx shadow diff`
// (internal/shadow) reads it back from both sides.
//
// The legacy's consumer turns each payload back into its Java notification object with its
// RedisTemplate's value serializer (Jackson with default typing: docs/sis-format.md, "The
// legacy FLOP notification"), so Marshal writes what that deserialiser accepts: every object,
// map, list, Date and long as ["class", value] (the form both of Jackson's type-id readers
// accept), the groups as the legacy's entity objects with their property names, and a
// schedule's flights as FlightDTO objects naming the flight. What msgx writes where the legacy's code is not followed:
//   - flightId is always the FLID (the legacy sends its database row id for some STYPs: a bug
//     msgx fixes); null on a schedule notification, which names its flights in flights.
//   - a delay's duration is minutes (the legacy computes hours×24+minutes: a bug msgx fixes).
//   - a schedule's FlightDTO carries only the flight's AODB id (the notify event has no more).
package legacyflop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// DefaultChannel is the channel the legacy web-socket service subscribes to.
const DefaultChannel = "FLOP"

// Notification types (the legacy's "add" is never emitted, by the legacy either).
const (
	TypeUpdate   = "update"
	TypeDelete   = "delete"
	TypeSchedule = "schedule"
)

// Java class names in the payload: the legacy's notification and flight classes, and the JDK
// classes Jackson names for a map, a list, a date and a long (docs/sis-format.md).
const (
	ClassNotification = "com.unisys.aos.view.viewentity.dto.FlightNotificationDTO"
	ClassFlightDTO    = "com.unisys.aos.view.viewentity.dto.FlightDTO"
	ClassFmsFlight    = EntityPackage + "FmsFlight"
	ClassHashMap      = "java.util.HashMap"
	ClassArrayList    = "java.util.ArrayList"
	ClassDate         = "java.util.Date"
	ClassLong         = "java.lang.Long"
	// EntityPackage holds the legacy's flight entities (FmsStand, FmsGate, …).
	EntityPackage = "com.unisys.aos.view.viewentity.entity.flight."
)

// Notification is one legacy FLOP notification, as msgx builds it; Marshal writes it in the
// legacy's typed JSON. UpdatedFields holds each key's value already in that JSON.
type Notification struct {
	Type          string // update | delete | schedule
	FlightID      *int64
	UpdatedFields map[string]json.RawMessage
	Flights       []int64 // a schedule's FLIDs
	ScheduleStart *int64  // epoch milliseconds
	ScheduleEnd   *int64
	CreateTime    int64
}

// Marshal writes n as the legacy's consumer deserialises it: a FlightNotificationDTO (every
// object as ["class", {…}]) with its properties in the class's order, every one present (null
// when empty), type as the Java enum constant (UPDATE, DELETE, SCHEDULE), updatedFields as a
// HashMap, flights as an ArrayList of FlightDTO and the times as Dates. No HTML escaping, no
// newline.
func (n Notification) Marshal() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`["` + ClassNotification + `",{"type":`)
	b.Write(encode(strings.ToUpper(n.Type)))
	b.WriteString(`,"updatedFields":`)
	if n.UpdatedFields == nil {
		b.WriteString("null")
	} else {
		b.WriteString(`["` + ClassHashMap + `",{`)
		keys := make([]string, 0, len(n.UpdatedFields))
		for k := range n.UpdatedFields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			v := n.UpdatedFields[k]
			if !json.Valid(v) {
				return nil, fmt.Errorf("updatedFields %s: not JSON: %.40q", k, v)
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(encode(k))
			b.WriteByte(':')
			b.Write(v)
		}
		b.WriteString("}]")
	}
	b.WriteString(`,"flightId":`)
	if n.FlightID == nil {
		b.WriteString("null")
	} else {
		fmt.Fprint(&b, *n.FlightID)
	}
	b.WriteString(`,"flights":`)
	if n.Flights == nil {
		b.WriteString("null")
	} else {
		b.WriteString(`["` + ClassArrayList + `",[`)
		for i, id := range n.Flights {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `["%s",{"flight":["%s",{"aodbId":%d}]}]`, ClassFlightDTO, ClassFmsFlight, id)
		}
		b.WriteString("]]")
	}
	b.WriteString(`,"scheduleStart":`)
	writeDate(&b, n.ScheduleStart)
	b.WriteString(`,"scheduleEnd":`)
	writeDate(&b, n.ScheduleEnd)
	b.WriteString(`,"createTime":`)
	writeDate(&b, &n.CreateTime)
	b.WriteString("}]")
	return b.Bytes(), nil
}

func writeDate(b *bytes.Buffer, ms *int64) {
	if ms == nil {
		b.WriteString("null")
		return
	}
	fmt.Fprintf(b, `["%s",%d]`, ClassDate, *ms)
}

// Keys are the legacy's updatedFields keys per FLOP STYP (docs/sis-format.md §3.8). A STYP with no
// entry (VIPF) has no notification in the legacy, and none in msgx's legacy format.
var Keys = map[string][]string{
	"ACFT": {"aircraftTypeCode"},
	"APPT": {"approvedTime"},
	"BOTM": {"boardingTime"},
	"CNCL": {"cancellationTime"},
	"EGSR": {"engineStartRequest"},
	"EGST": {"engineStartTime"},
	"FINT": {"finalTim"}, // sic: the legacy's key has the typo, and its consumer reads it
	"LACL": {"lastCallTime"},
	"COBT": {"cobtCode"},
	"CTOT": {"ctotCode"},
	"EOBT": {"eobtCode"},
	"IEST": {"iestCode"},
	"TOBT": {"tobtCode"},
	"PEDT": {"pedtCode"},
	"PADT": {"padtCode"},
	"NEAT": {"neatCode"},
	"NAAT": {"naatCode"},
	"PORT": {"portOpenTime", "portCloseTime"},
	"RUNW": {"logicalRunwayCode"},
	"STND": {"currentStandCode"},
	"TRML": {"terminalCode"},
	"MAXP": {"maxPaxCode"},
	"RENO": {"registrationCode"},
	"REMC": {"remarksCode"},
	"FLIN": {"flightIndicatorCode"},
	"FLTY": {"flightTypeCode"},
	"FTSS": {"statusCodeCode"},
	"EXSS": {"externalStatusCode", "externalStatusComment"},
	"FDIV": {"divAirport", "divDirection", "divReason"},
	"FRET": {"returnReason", "returnType"},
	"FLAB": {"landingAbortIndicator", "landingAbortReason"},
	"HNAG": {"fieldAgent", "maintenanceAgent", "passengerAgent"},
	"TAOP": {"turnaroundOperator", "turnaroundFlightNumber", "turnaroundFlightId"},
	"VIPP": {"vipCount", "vipFlag"},
	"ABTM": {"airbridges"},
	"CHDT": {"chutes"},
	"CHOT": {"chocks"},
	"CKDT": {"checkinDesks"},
	"CLDT": {"carousels"},
	"GTDT": {"gates"},
	"PSDT": {"stands"},
	"DELY": {"delays"},
	"ERUT": {"entireRoute"},
	"SRVT": {"services"},
	"PSHT": {"standPushTime"},
	"TIPT": {"standTractorTime"},
}

// CodeShareKey is the key of a code-share master's flight-number list, which the legacy
// publishes when a code-share flight changes (docs/sis-format.md §3.6).
const CodeShareKey = "codeShareFlightList"

// RowIDSTYPs are the STYPs whose notifications carry the legacy's internal database row id as
// flightId instead of the FLID (docs/sis-format.md §3.8, a bug). msgx always sends the FLID.
var RowIDSTYPs = []string{"APPT", "BOTM", "CNCL", "EGSR", "EGST", "FINT", "LACL", "ERUT", "FDIV", "FLAB", "FRET", "HNAG", "SRVT", "TAOP", "VIPP"}

// STYPOf returns the FLOP STYP whose notification carries key ("" for none, e.g.
// codeShareFlightList).
func STYPOf(key string) string {
	for styp, keys := range Keys {
		if slices.Contains(keys, key) {
			return styp
		}
	}
	return ""
}

// simple maps a record field to its legacy key where the field alone makes the value.
var simple = map[string]string{
	"ACFT": "aircraftTypeCode", "APPT": "approvedTime", "BOTM": "boardingTime",
	"CNCL": "cancellationTime", "EGSR": "engineStartRequest", "EGST": "engineStartTime",
	"FINT": "finalTim", "LACL": "lastCallTime",
	"COBT": "cobtCode", "CTOT": "ctotCode", "EOBT": "eobtCode", "IEST": "iestCode", "TOBT": "tobtCode",
	"PEDT": "pedtCode", "PADT": "padtCode", "NEAT": "neatCode", "NAAT": "naatCode",
	"RUNW": "logicalRunwayCode", "STND": "currentStandCode", "TRML": "terminalCode",
	"MAXP": "maxPaxCode", "RENO": "registrationCode", "REMC": "remarksCode",
	"FLIN": "flightIndicatorCode", "FLTY": "flightTypeCode", "FTSS": "statusCodeCode",
	"EXSC": "externalStatusCode", "EXSR": "externalStatusComment",
	"FHAG": "fieldAgent", "PHAG": "passengerAgent", "MHAG": "maintenanceAgent",
	"TAOP": "turnaroundOperator", "TAFL": "turnaroundFlightNumber", "TAID": "turnaroundFlightId",
	"VIPP": "vipCount", "VIPR": "vipFlag",
	"ABTM": "airbridges", "CHDT": "chutes", "CHOT": "chocks", "CKDT": "checkinDesks",
	"CLDT": "carousels", "GTDT": "gates", "DELY": "delays", "ERUT": "entireRoute", "SRVT": "services",
	"CSFL": CodeShareKey,
}

// timeFields are the record fields and group parts that hold a time (RFC 3339 in msgx's
// record, a java.util.Date in the legacy's payload).
var timeFields = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`APPT BOTM CNCL EGSR EGST FINT LACL COBT CTOT EOBT TOBT IEST
		PEDT PADT NEAT NAAT ESTT ACTT POTM STST STET PSTM TRTM PGOT PGCT GOTM GCTM PCBT PCET CBTM
		CETM PCOT PCCT COTM CCTM FBAG LBAG CHTM AOTM STRT SCAT SCDT SRST SRET VTST VTET`) {
		timeFields[f] = true
	}
	for _, e := range entities {
		for _, p := range e.props {
			if timeFields[p.part] {
				timeFields[p.name] = true
			}
		}
	}
}

// IsTimeKey reports whether a legacy key, a group part name or a property of a legacy entity
// holds a time.
func IsTimeKey(key string) bool {
	switch key {
	case "approvedTime", "boardingTime", "cancellationTime", "engineStartRequest", "engineStartTime",
		"finalTim", "lastCallTime", "portOpenTime", "portCloseTime", "scheduleStart", "scheduleEnd", "createTime":
		return true
	}
	return strings.HasSuffix(key, "Code") && len(key) == 8 && timeFields[strings.ToUpper(key[:4])] || timeFields[key]
}

// entity is a legacy entity class (in EntityPackage) and its properties: msgx's group part →
// the property it fills. Every entity also carries flightId, the flight's AODB id (the FLID).
type entity struct {
	class string
	props []prop
}

type prop struct{ part, name string }

// entities are the legacy's entity classes of the groups, by record field. The property names
// are those the legacy's message processor sets from each SIS part (docs/sis-format.md).
var entities = map[string]entity{
	"ABTM": {"FmsAirbridge", []prop{{"ABDG", "airbridgeCode"}, {"ASNO", "sequenceNumber"}, {"AOTM", "operationTime"}, {"ABOP", "operation"}}},
	"CHDT": {"FmsChute", []prop{{"CHUT", "chuteCode"}, {"CHNO", "sequenceNumber"}, {"CBTM", "actualStartTime"}, {"CETM", "actualEndTime"},
		{"PCBT", "plannedStartTime"}, {"PCET", "plannedEndTime"}, {"CTYP", "chuteIndicator"}, {"CCLS", "chuteCategory"}}},
	"CHOT": {"FmsChock", []prop{{"CHID", "chockIndicator"}, {"CSNO", "sequenceNumber"}, {"CHST", "standCode"}, {"CHTM", "chockTime"}}},
	"CKDT": {"FmsCheckinDesk", []prop{{"CHKC", "checkinDeskCode"}, {"CKNO", "sequenceNumber"}, {"COTM", "actualStartTime"}, {"CCTM", "actualEndTime"},
		{"PCOT", "plannedStartTime"}, {"PCCT", "plannedEndTime"}, {"CTYP", "checkinIndicator"}, {"CCLS", "checkinDeskCategory"}}},
	"CLDT": {"FmsCarousel", []prop{{"BELT", "carouselCode"}, {"CLNO", "sequenceNumber"}, {"FBAG", "firstBagTime"}, {"LBAG", "lastBagTime"},
		{"PCOT", "plannedStartTime"}, {"PCCT", "plannedEndTime"}, {"BTYP", "carouselIndicator"}, {"BCLS", "carouselClass"}}},
	"GTDT": {"FmsGate", []prop{{"GATE", "gateCode"}, {"GTNO", "sequenceNumber"}, {"GOTM", "actualStartTime"}, {"GCTM", "actualEndTime"},
		{"PGOT", "plannedStartTime"}, {"PGCT", "plannedEndTime"}, {"GTYP", "gateIndicator"}}},
	"PSDT": {"FmsStand", []prop{{"PSST", "standCode"}, {"PSNO", "sequenceNumber"}, {"STST", "startTime"}, {"STET", "endTime"},
		{"PSID", "pushIndicator"}, {"PSTM", "pushTime"}, {"TRTM", "tractorTime"}}},
	"DELY": {"FmsDelay", []prop{{"CODE", "delayCode"}, {"DURA", "duration"}, {"STRT", "startTime"}, {"TEXT", "comments"}}},
	"ERUT": {"FmsEntireRoute", []prop{{"APCD", "airportCode"}, {"RTNO", "sequenceNumber"}, {"SCAT", "arrivalTime"}, {"SCDT", "departureTime"}}},
	"SRVT": {"FmsService", []prop{{"SRTC", "serviceCode"}, {"SRQT", "serviceQuantity"}, {"SRST", "startTime"}, {"SRET", "endTime"},
		{"SRPR", "serviceProvider"}, {"SANR", "abnormalReason"}, {"SARR", "abnormalRemark"}}},
}

// Event is what the conversion reads of one delivered notify event: its delivery envelope
// (docs/events.md) with the notify payload (docs/payloads.md#notify).
type Event struct {
	MsgID     int64     `json:"msg_id"`
	TypeTag   string    `json:"type_tag"`
	Kind      string    `json:"kind"`
	CreatedAt time.Time `json:"created_at"`
	Payload   struct {
		Type          string                     `json:"type"`
		FLID          int64                      `json:"FLID"`
		UpdatedFields map[string]json.RawMessage `json:"updatedFields"`
		ScheduleStart *time.Time                 `json:"scheduleStart"`
		ScheduleEnd   *time.Time                 `json:"scheduleEnd"`
	} `json:"payload"`
}

// ErrNotNotify is returned for an event whose kind is not notify: the legacy format is built
// from REDIS_NOTIFY events (the target itself or a copy-of it) only.
var ErrNotNotify = errors.New("format legacy takes notify events only (target REDIS_NOTIFY, or copy-of: REDIS_NOTIFY)")

// ParseEvent reads a delivery envelope.
func ParseEvent(value []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(value, &e); err != nil {
		return e, fmt.Errorf("not a delivery envelope: %w", err)
	}
	if e.Kind != "notify" {
		return e, fmt.Errorf("event kind %q: %w", e.Kind, ErrNotNotify)
	}
	switch e.Payload.Type {
	case TypeUpdate, TypeDelete, TypeSchedule:
	default:
		return e, fmt.Errorf("notify type %q is not update, delete or schedule", e.Payload.Type)
	}
	return e, nil
}

// Convert builds the legacy notification of one event. ok is false when the legacy has no
// notification for it: an update whose changed fields have no legacy key (FLOP VIPF, whose
// legacy processor publishes nothing).
func Convert(e Event) (n Notification, ok bool, err error) {
	p := e.Payload
	n = Notification{Type: p.Type, CreateTime: e.CreatedAt.UnixMilli()}
	flid := p.FLID
	switch p.Type {
	case TypeDelete:
		n.FlightID = &flid
	case TypeSchedule:
		n.Flights = []int64{flid}
		n.ScheduleStart, n.ScheduleEnd = millis(p.ScheduleStart), millis(p.ScheduleEnd)
	case TypeUpdate:
		n.FlightID = &flid
		_, styp, _ := strings.Cut(e.TypeTag, "-")
		fields, err := UpdatedFields(flid, styp, p.UpdatedFields)
		if err != nil {
			return n, false, fmt.Errorf("flight %d: %w", flid, err)
		}
		if len(fields) == 0 {
			return n, false, nil
		}
		n.UpdatedFields = fields
	}
	return n, true, nil
}

func millis(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	ms := t.UnixMilli()
	return &ms
}

// Merge adds the flights of schedule notification b to a when both come from the same message
// with the same window, and reports whether it did. A snapshot is one message; the legacy sends
// one notification for it, msgx one per run of its events that one send carries.
func Merge(a *Notification, aMsg int64, b Notification, bMsg int64) bool {
	if a.Type != TypeSchedule || b.Type != TypeSchedule || aMsg != bMsg ||
		!eqPtr(a.ScheduleStart, b.ScheduleStart) || !eqPtr(a.ScheduleEnd, b.ScheduleEnd) {
		return false
	}
	a.Flights = append(a.Flights, b.Flights...)
	return true
}

func eqPtr(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// UpdatedFields turns msgx's changed fields (record field → new value, null when cleared) of a
// message of FLOP STYP styp on flight flid into the legacy's keys and their values in the
// legacy's typed JSON. Fields the legacy has no key for (VIPF, and those only a schedule sets)
// are left out; a value msgx cannot put in the legacy's shape (a time that is not RFC 3339, a
// group part the legacy has no property for) is an error naming the field.
func UpdatedFields(flid int64, styp string, changed map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for field, raw := range changed {
		v, err := decode(raw)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", field, err)
		}
		var put map[string]any
		switch field {
		case "PSDT":
			key := "stands"
			switch styp {
			case "PSHT":
				key = "standPushTime"
			case "TIPT":
				key = "standTractorTime"
			}
			put = map[string]any{key: nil}
		case "PORT":
			open, closed := any(nil), any(nil)
			list, _ := v.([]any)
			for _, e := range list {
				m, _ := e.(map[string]any)
				switch m["POID"] {
				case "O":
					open = m["POTM"]
				case "C":
					closed = m["POTM"]
				}
			}
			if open, err = date(open); err == nil {
				closed, err = date(closed)
			}
			put = map[string]any{"portOpenTime": open, "portCloseTime": closed}
		case "FDIV":
			m, _ := v.(map[string]any)
			put = map[string]any{"divAirport": m["DDES"], "divDirection": m["DDIR"], "divReason": m["TEXT"]}
		case "FRET":
			m, _ := v.(map[string]any)
			put = map[string]any{"returnType": m["REID"], "returnReason": m["TEXT"]}
		case "FLAB":
			m, _ := v.(map[string]any)
			put = map[string]any{"landingAbortIndicator": m["ARES"], "landingAbortReason": m["TEXT"]}
		default:
			key, ok := simple[field]
			if !ok {
				continue
			}
			if timeFields[field] {
				v, err = date(v)
			}
			put = map[string]any{key: v}
		}
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", field, err)
		}
		if ent, ok := entities[field]; ok {
			for k := range put {
				if put[k], err = entityList(flid, ent, v); err != nil {
					return nil, fmt.Errorf("field %s: %w", field, err)
				}
			}
		}
		for k, x := range put {
			if out[k], err = typed(x); err != nil {
				return nil, fmt.Errorf("field %s: %w", field, err)
			}
		}
	}
	return out, nil
}

// javaDate is a java.util.Date: epoch milliseconds.
type javaDate int64

// javaObject is an object of a Java class, written ["class", {properties in order}].
type javaObject struct {
	class string
	props []any // name, value, name, value, …
}

// date turns an RFC 3339 time (or null) into a javaDate.
func date(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	s, ok := v.(string)
	t, err := time.Parse(time.RFC3339Nano, s)
	if !ok || err != nil {
		return nil, fmt.Errorf("time %v is not RFC 3339", v)
	}
	return javaDate(t.UnixMilli()), nil
}

// entityList turns msgx's group entries into a list of the legacy's entity objects (nil when
// the group was cleared).
func entityList(flid int64, ent entity, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("a group, but %T", v)
	}
	out := make([]any, 0, len(list))
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("entry %d is %T, not an object", i+1, e)
		}
		o := javaObject{class: EntityPackage + ent.class, props: []any{"flightId", json.Number(fmt.Sprint(flid))}}
		used := 0
		for _, p := range ent.props {
			x, in := m[p.part]
			if !in {
				continue
			}
			used++
			if timeFields[p.part] {
				var err error
				if x, err = date(x); err != nil {
					return nil, fmt.Errorf("entry %d %s: %w", i+1, p.part, err)
				}
			}
			o.props = append(o.props, p.name, x)
		}
		if used != len(m) {
			for part := range m {
				if !slices.ContainsFunc(ent.props, func(p prop) bool { return p.part == part }) {
					return nil, fmt.Errorf("entry %d: part %s has no property in the legacy's %s", i+1, part, ent.class)
				}
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// typed writes v as Jackson with default typing writes a value of declared type Object: a
// string, boolean, int or double as itself, a number beyond an int as a java.lang.Long, a
// list as a java.util.ArrayList, a map as a java.util.HashMap, a javaDate as a java.util.Date.
func typed(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := writeTyped(&b, v, true); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeTyped writes v; object says whether its declared type is Object (inside an entity, a
// property's declared type is its own: a number is written as it is).
func writeTyped(b *bytes.Buffer, v any, object bool) error {
	switch x := v.(type) {
	case nil, string, bool:
		b.Write(encode(x))
	case json.Number:
		if n, err := x.Int64(); err == nil && object && (n > 1<<31-1 || n < -1<<31) {
			fmt.Fprintf(b, `["%s",%d]`, ClassLong, n)
		} else {
			b.WriteString(x.String())
		}
	case javaDate:
		fmt.Fprintf(b, `["%s",%d]`, ClassDate, int64(x))
	case []any:
		b.WriteString(`["` + ClassArrayList + `",[`)
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeTyped(b, e, true); err != nil {
				return err
			}
		}
		b.WriteString("]]")
	case javaObject:
		return writeObject(b, x, false)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		o := javaObject{class: ClassHashMap}
		for _, k := range keys {
			o.props = append(o.props, k, x[k])
		}
		return writeObject(b, o, true)
	default:
		return fmt.Errorf("no Java shape for %T", v)
	}
	return nil
}

// writeObject writes o as ["class", {…}]; object says whether its properties are declared
// Object (a map's values) or have their own declared types (an entity's).
func writeObject(b *bytes.Buffer, o javaObject, object bool) error {
	b.WriteByte('[')
	b.Write(encode(o.class))
	b.WriteString(",{")
	for i := 0; i < len(o.props); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(encode(o.props[i]))
		b.WriteByte(':')
		if err := writeTyped(b, o.props[i+1], object); err != nil {
			return err
		}
	}
	b.WriteString("}]")
	return nil
}

func decode(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// encode writes a string, bool or nil as JSON (no HTML escaping); it cannot fail on those.
func encode(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
