// Package legacyflop is the notification the legacy web-socket service reads from the Redis
// channel FLOP (docs/sis-format.md §3.8): its shape, the legacy's updatedFields keys per FLOP STYP, and
// the conversion from msgx's own notify events (handler.TargetNotify) into that shape. The
// Redis sink publishes it for a target with `format: legacy`; `msgx shadow diff`
// (internal/shadow) reads it back from both sides.
//
// What msgx writes where docs/sis-format.md is silent (the legacy's value encodings are not described):
//   - flightId is always the FLID (the legacy sends its database row id for some STYPs: a bug
//     msgx fixes); null on a schedule notification, which names its flights in flights.
//   - times are epoch milliseconds (how Jackson writes a java.util.Date by default), at the
//     top level and inside groups; scheduleStart, scheduleEnd and createTime too.
//   - groups (stands, gates, …) are msgx's group entries under their SIS part names
//     (docs/payloads.md), with their times as epoch milliseconds.
//   - flights is the list of FLIDs a schedule notification covers.
//   - every field is present, null when it has no value (Jackson's default inclusion).
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

// Notification is one legacy FLOP notification. Field order is the JSON order.
type Notification struct {
	Type          string                     `json:"type"`
	FlightID      *int64                     `json:"flightId"`
	UpdatedFields map[string]json.RawMessage `json:"updatedFields"`
	Flights       []int64                    `json:"flights"`
	ScheduleStart *int64                     `json:"scheduleStart"`
	ScheduleEnd   *int64                     `json:"scheduleEnd"`
	CreateTime    int64                      `json:"createTime"`
}

// Marshal writes n as the JSON the legacy consumer reads (no HTML escaping, no newline).
func (n Notification) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
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
// record, epoch milliseconds in the legacy format).
var timeFields = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`APPT BOTM CNCL EGSR EGST FINT LACL COBT CTOT EOBT TOBT IEST
		PEDT PADT NEAT NAAT ESTT ACTT POTM STST STET PSTM TRTM PGOT PGCT GOTM GCTM PCBT PCET CBTM
		CETM PCOT PCCT COTM CCTM FBAG LBAG CHTM AOTM STRT SCAT SCDT SRST SRET VTST VTET`) {
		timeFields[f] = true
	}
}

// IsTimeKey reports whether a legacy key or a group part name holds a time.
func IsTimeKey(key string) bool {
	switch key {
	case "approvedTime", "boardingTime", "cancellationTime", "engineStartRequest", "engineStartTime",
		"finalTim", "lastCallTime", "portOpenTime", "portCloseTime", "scheduleStart", "scheduleEnd", "createTime":
		return true
	}
	return strings.HasSuffix(key, "Code") && len(key) == 8 && timeFields[strings.ToUpper(key[:4])] || timeFields[key]
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
		fields, err := UpdatedFields(styp, p.UpdatedFields)
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
// message of FLOP STYP styp into the legacy's keys and values. Fields the legacy has no key for
// (VIPF, and those only a schedule sets) are left out.
func UpdatedFields(styp string, changed map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for field, raw := range changed {
		v, err := decode(raw)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", field, err)
		}
		switch field {
		case "PSDT":
			key := "stands"
			switch styp {
			case "PSHT":
				key = "standPushTime"
			case "TIPT":
				key = "standTractorTime"
			}
			out[key] = encode(legacyValue(field, v))
		case "PORT":
			open, closed := any(nil), any(nil)
			list, _ := v.([]any)
			for _, e := range list {
				m, _ := e.(map[string]any)
				switch m["POID"] {
				case "O":
					open = legacyValue("POTM", m["POTM"])
				case "C":
					closed = legacyValue("POTM", m["POTM"])
				}
			}
			out["portOpenTime"], out["portCloseTime"] = encode(open), encode(closed)
		case "FDIV":
			m, _ := v.(map[string]any)
			out["divAirport"], out["divDirection"], out["divReason"] = part(m, "DDES"), part(m, "DDIR"), part(m, "TEXT")
		case "FRET":
			m, _ := v.(map[string]any)
			out["returnType"], out["returnReason"] = part(m, "REID"), part(m, "TEXT")
		case "FLAB":
			m, _ := v.(map[string]any)
			out["landingAbortIndicator"], out["landingAbortReason"] = part(m, "ARES"), part(m, "TEXT")
		default:
			if key, ok := simple[field]; ok {
				out[key] = encode(legacyValue(field, v))
			}
		}
	}
	return out, nil
}

// part is the value of one part of an attribute-and-text element (null when absent).
func part(m map[string]any, name string) json.RawMessage {
	if m == nil {
		return encode(nil)
	}
	return encode(m[name])
}

// legacyValue converts the times in v (the value of field name) to epoch milliseconds:
// v itself when name is a time field, else the time parts of its group entries.
func legacyValue(name string, v any) any {
	switch x := v.(type) {
	case string:
		if timeFields[name] {
			if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
				return json.Number(fmt.Sprint(t.UnixMilli()))
			}
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = legacyValue(name, e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = legacyValue(k, e)
		}
		return out
	}
	return v
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

// encode writes v; it cannot fail on what decode and legacyValue produce.
func encode(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage("null")
	}
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}
