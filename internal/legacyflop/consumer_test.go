package legacyflop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// This file reads a payload the way the legacy's web-socket service does: its RedisTemplate's
// value serializer turns the bytes into Java objects with Jackson's default typing (NON_FINAL).
// Whether that serializer takes the type id as an "@class" property or as a wrapper array is
// not known (docs/sis-format.md), so the model takes only what both readers take: a value of a
// non-final declared type as ["class", value]; a string, boolean or number where Object is
// declared as it is. It fails on an unknown property, an unknown class, a class that is not of
// the declared type, and a non-final value without its class. The Java model below is written
// out from the legacy's classes, apart from the converter's tables.

// kind is the declared type of a Java property.
type kind int

const (
	kObject    kind = iota // java.lang.Object (a value of Map<String,Object>)
	kLong                  // java.lang.Long (final: no type id)
	kScalar                // String, Short, Integer, Byte (final: no type id)
	kEnum                  // NotificationType (final: the constant's name)
	kDate                  // java.util.Date (not final: ["java.util.Date", ms])
	kMap                   // Map<String,Object>
	kFlights               // Collection<FlightDTO>
	kFlightDTO             // FlightDTO
	kFmsFlight             // FmsFlight
)

// javaClasses are the legacy classes a payload may name, with the properties msgx may write.
var javaClasses = map[string]map[string]kind{
	ClassNotification: {"type": kEnum, "updatedFields": kMap, "flightId": kLong, "flights": kFlights,
		"scheduleStart": kDate, "scheduleEnd": kDate, "createTime": kDate},
	ClassFlightDTO: {"flight": kFmsFlight},
	ClassFmsFlight: {"aodbId": kLong},
}

func init() {
	// The legacy's entity properties per class, as its message processor sets them.
	for class, props := range map[string]string{
		"FmsAirbridge":   "airbridgeCode sequenceNumber operationTime:d operation",
		"FmsChute":       "chuteCode sequenceNumber actualStartTime:d actualEndTime:d plannedStartTime:d plannedEndTime:d chuteIndicator chuteCategory",
		"FmsChock":       "chockIndicator sequenceNumber standCode chockTime:d",
		"FmsCheckinDesk": "checkinDeskCode sequenceNumber actualStartTime:d actualEndTime:d plannedStartTime:d plannedEndTime:d checkinIndicator checkinDeskCategory",
		"FmsCarousel":    "carouselCode sequenceNumber firstBagTime:d lastBagTime:d plannedStartTime:d plannedEndTime:d carouselIndicator carouselClass",
		"FmsGate":        "gateCode sequenceNumber actualStartTime:d actualEndTime:d plannedStartTime:d plannedEndTime:d gateIndicator",
		"FmsStand":       "standCode sequenceNumber startTime:d endTime:d pushIndicator pushTime:d tractorTime:d",
		"FmsDelay":       "delayCode duration startTime:d comments",
		"FmsEntireRoute": "airportCode sequenceNumber arrivalTime:d departureTime:d",
		"FmsService":     "serviceCode serviceQuantity startTime:d endTime:d serviceProvider abnormalReason abnormalRemark",
	} {
		m := map[string]kind{"flightId": kLong}
		for _, p := range strings.Fields(props) {
			name, d := strings.CutSuffix(p, ":d")
			m[name] = kScalar
			if d {
				m[name] = kDate
			}
		}
		javaClasses[EntityPackage+class] = m
	}
}

var enumConstants = []string{"ADD", "UPDATE", "DELETE", "SCHEDULE"}

// consume deserialises payload as the legacy's consumer does and returns it with the type
// information taken out (a Date as a javaDate, an object with its "@class" kept), or the error
// Jackson would raise.
func consume(payload []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data")
	}
	out, err := read(v, kObject, "$")
	if err != nil {
		return nil, err
	}
	m, ok := out.(map[string]any)
	if !ok || m["@class"] != ClassNotification {
		return nil, fmt.Errorf("$: not a %s: %s", ClassNotification, payload)
	}
	return m, nil
}

// read deserialises v of declared kind k at path.
func read(v any, k kind, path string) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch k {
	case kLong:
		n, ok := v.(json.Number)
		if _, err := n.Int64(); !ok || err != nil {
			return nil, fmt.Errorf("%s: %v is not a long", path, v)
		}
		return n, nil
	case kScalar:
		switch v.(type) {
		case string, json.Number, bool:
			return v, nil
		}
		return nil, fmt.Errorf("%s: %v is not a scalar", path, v)
	case kEnum:
		if s, ok := v.(string); !ok || !slices.Contains(enumConstants, s) {
			return nil, fmt.Errorf("%s: %v is not a NotificationType constant %v", path, v, enumConstants)
		}
		return v, nil
	}
	// Every other declared type is not final: the value carries its class.
	if k == kObject {
		switch x := v.(type) {
		case string, bool:
			return v, nil
		case json.Number: // Jackson reads an untyped number into an Integer, a Long or a Double
			return x, nil
		}
	}
	var class string
	var body any
	switch x := v.(type) {
	case []any:
		s, ok := "", len(x) == 2
		if ok {
			s, ok = x[0].(string)
		}
		if !ok {
			return nil, fmt.Errorf("%s: an array that is not [\"class\", value]: %v", path, v)
		}
		class, body = s, x[1]
	case map[string]any:
		return nil, fmt.Errorf("%s: an object that is not [\"class\", {…}] (an \"@class\" property is read by one of Jackson's readers only)", path)
	default:
		return nil, fmt.Errorf("%s: %v has no type id", path, v)
	}
	if !assignable(class, k) {
		return nil, fmt.Errorf("%s: class %s is not of the declared type", path, class)
	}
	switch class {
	case ClassDate:
		n, ok := body.(json.Number)
		ms, err := n.Int64()
		if !ok || err != nil {
			return nil, fmt.Errorf("%s: a Date of %v", path, body)
		}
		return javaDate(ms), nil
	case ClassLong:
		return read(body, kLong, path)
	case ClassArrayList, "java.util.LinkedList":
		list, ok := body.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: a %s of %v", path, class, body)
		}
		elem := kObject
		if k == kFlights {
			elem = kFlightDTO
		}
		out := make([]any, len(list))
		for i, e := range list {
			var err error
			if out[i], err = read(e, elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	case ClassHashMap, "java.util.LinkedHashMap":
		m, ok := body.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: a %s of %v", path, class, body)
		}
		out := map[string]any{"@class": class}
		for key, e := range m {
			x, err := read(e, kObject, path+"."+key)
			if err != nil {
				return nil, err
			}
			out[key] = x
		}
		return out, nil
	}
	return readBean(class, body, path)
}

// readBean reads an object of a legacy class: every property must exist on the class.
func readBean(class string, body any, path string) (any, error) {
	props, known := javaClasses[class]
	if !known {
		return nil, fmt.Errorf("%s: class %s is not on the consumer's classpath (as far as this model knows)", path, class)
	}
	m, ok := body.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: a %s of %v", path, class, body)
	}
	out := map[string]any{"@class": class}
	for key, e := range m {
		pk, ok := props[key]
		if !ok {
			return nil, fmt.Errorf("%s: unrecognized property %q of %s", path, key, class)
		}
		x, err := read(e, pk, path+"."+key)
		if err != nil {
			return nil, err
		}
		out[key] = x
	}
	return out, nil
}

// assignable reports whether class may stand where kind k is declared.
func assignable(class string, k kind) bool {
	switch k {
	case kObject:
		return true
	case kDate:
		return class == ClassDate
	case kMap:
		return class == ClassHashMap || class == "java.util.LinkedHashMap"
	case kFlights:
		return class == ClassArrayList || class == "java.util.LinkedList"
	case kFmsFlight:
		return class == ClassFmsFlight
	case kFlightDTO:
		return class == ClassFlightDTO
	}
	return false
}

// TestConsumerReadsEveryPayload: every notification the golden samples produce deserialises
// as the legacy's consumer deserialises it.
func TestConsumerReadsEveryPayload(t *testing.T) {
	for tag, payloads := range inputs(t) {
		for _, raw := range convertAll(t, tag, payloads) {
			if _, err := consume(raw); err != nil {
				t.Errorf("%s: %v\n%s", tag, err, raw)
			}
		}
	}
}

// TestConsumerRefusesWhatJacksonRefuses: the model above is not a rubber stamp.
func TestConsumerRefusesWhatJacksonRefuses(t *testing.T) {
	n := `["` + ClassNotification + `",{"type":"UPDATE","updatedFields":["java.util.HashMap",{%s}],"flightId":7001,"flights":null,"scheduleStart":null,"scheduleEnd":null,"createTime":["java.util.Date",1]}]`
	chock := `"chocks":["java.util.ArrayList",[["` + EntityPackage + `FmsChock",{%s}]]]`
	for _, c := range []struct{ name, fields, want string }{
		{"a bare list", `"chocks":[]`, "not [\"class\", value]"},
		{"an entity with an @class property", `"chocks":["java.util.ArrayList",[{"@class":"` + EntityPackage + `FmsChock","standCode":"213"}]]`, "not [\"class\", {…}]"},
		{"a SIS part name", fmt.Sprintf(chock, `"CHST":"213"`), "unrecognized property"},
		{"a Date property as a number", fmt.Sprintf(chock, `"chockTime":1773549600000`), "has no type id"},
		{"a Date property as a string", fmt.Sprintf(chock, `"chockTime":"2026-03-15T02:05:00Z"`), "has no type id"},
		{"an unknown class", `"x":["com.example.Nothing",{}]`, "not on the consumer's classpath"},
		{"a FlightDTO where a Date is declared", fmt.Sprintf(chock, `"chockTime":["`+ClassFlightDTO+`",{}]`), "not of the declared type"},
	} {
		_, err := consume(fmt.Appendf(nil, n, c.fields))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := consume([]byte(strings.Replace(fmt.Sprintf(n, `"a":"b"`), `"UPDATE"`, `"update"`, 1))); err == nil {
		t.Error("a lower-case type was read as a NotificationType constant")
	}
	if _, err := consume(fmt.Appendf(nil, n, `"a":"b"`)); err != nil {
		t.Errorf("a well-formed notification: %v", err)
	}
}

// TestDocumentedPayloadsAreReadable: the example payloads in docs/sinks.md ("format: legacy")
// and docs/sis-format.md (3.9) deserialise as the consumer deserialises them.
func TestDocumentedPayloadsAreReadable(t *testing.T) {
	for _, doc := range []struct{ path, from, to string }{
		{"../../docs/sinks.md", "### format: legacy", "\n## "},
		{"../../docs/sis-format.md", "### 3.9 ", "\n## "},
	} {
		b, err := os.ReadFile(doc.path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		i := strings.Index(s, doc.from)
		if i < 0 {
			t.Fatalf("%s: no %q", doc.path, doc.from)
		}
		s = s[i:]
		if j := strings.Index(s, doc.to); j > 0 {
			s = s[:j]
		}
		n := 0
		for _, block := range strings.Split(s, "```json\n")[1:] {
			block, _, _ = strings.Cut(block, "```")
			var payloads []string
			if strings.Count(block, "\n[") > 0 && strings.HasPrefix(block, `["`) && !strings.Contains(block, "\n ") {
				payloads = strings.Split(strings.TrimSpace(block), "\n") // one a line
			} else {
				payloads = []string{block}
			}
			for _, p := range payloads {
				n++
				if _, err := consume([]byte(p)); err != nil {
					t.Errorf("%s: %v\n%s", doc.path, err, p)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no example payload", doc.path)
		}
	}
}
