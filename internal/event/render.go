package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The targets a flight change is rendered for, each a family of payload: a target configured
// copy-of one of them gets its family's payload (docs/payloads.md describes each).
const (
	TargetFlop   = "KAFKA_FLOP"   // changed fields, old and new values
	TargetSchd   = "KAFKA_SCHD"   // the whole record after the change (batched by the dispatcher)
	TargetNotify = "REDIS_NOTIFY" // a short notification for the console and web clients
	TargetES     = "ES_FLIGHT"    // the Elasticsearch flight document (phase B)
)

// The payload kinds the renderers write (MSG_EVENT's kind).
const (
	KindFlop     = "flop"
	KindSchd     = "schd"
	KindNotify   = "notify"
	KindESUpsert = "es-upsert"
	KindESDelete = "es-delete"
)

// KindChange is the kind of a stored event that holds a flight change's canonical encoding
// (Encode) rather than a target's payload: it is delivered and shown as Render writes it for
// the family of the event's target (Stored). Every other kind holds the target's payload.
const KindChange = "change"

// Shared is the target of a stored event every target takes (the outbox's log row): each
// renders it for its family at delivery. Only a flight change's canonical event is shared.
const Shared = "*"

// Render renders c for a target of family (one of the four targets above): the kind and the
// payload of the event the handler writes for that target, byte for byte. It fails on any
// other family, and where Notify fails.
func Render(family string, c *FlightChange) (kind string, payload []byte, err error) {
	switch family {
	case TargetFlop:
		return KindFlop, Flop(c), nil
	case TargetSchd:
		return KindSchd, Schd(c), nil
	case TargetNotify:
		p, err := Notify(c)
		if err != nil {
			return "", nil, err
		}
		return KindNotify, p, nil
	case TargetES:
		kind, p := ES(c)
		return kind, p, nil
	}
	if family == "" {
		return "", nil, errors.New("the target has no family (it is none of " + families + " nor a copy-of one)")
	}
	return "", nil, fmt.Errorf("family %q is none of %s", family, families)
}

// Families are the four targets a flight change is rendered for, each its own family, in the
// order docs/payloads.md gives: the targets the handlers emit to (handler.Targets).
var Families = []string{TargetFlop, TargetSchd, TargetNotify, TargetES}

// families names the four families, for Render's error.
var families = strings.Join(Families, ", ")

// Stored returns the kind and payload a stored event (its kind and payload as stored) of a
// target of family is delivered and shown as: kind and payload themselves, or for KindChange
// the decoded change rendered for family (Render). It fails on a KindChange payload that
// Decode refuses and on a family Render does not know; a stored event of another kind needs
// no family. The payload may share stored's memory.
func Stored(family, kind string, stored []byte) (string, []byte, error) {
	if kind != KindChange {
		return kind, stored, nil
	}
	c, err := Decode(stored)
	if err != nil {
		return "", nil, err
	}
	return Render(family, &c)
}

var null = []byte("null")

// Flop renders the KAFKA_FLOP payload: {"FLID":n,"op":…,"changes":{key:{"old":…,"new":…},…}}
// with the changes in their order, keys written as json.Marshal writes a map's keys and values
// as they are.
func Flop(c *FlightChange) []byte {
	size := 64
	for _, ch := range c.Changes {
		size += len(ch.Key) + len(ch.Old) + len(ch.New) + 20
	}
	out := make([]byte, 0, size)
	out = append(out, `{"FLID":`...)
	out = strconv.AppendInt(out, c.FLID, 10)
	out = append(out, `,"op":`...)
	out = appendString(out, string(c.Op))
	out = append(out, `,"changes":{`...)
	for i, ch := range c.Changes {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendString(out, ch.Key)
		out = append(out, `:{"old":`...)
		out = appendValue(out, ch.Old)
		out = append(out, `,"new":`...)
		out = appendValue(out, ch.New)
		out = append(out, '}')
	}
	return append(out, "}}"...)
}

// Schd renders the KAFKA_SCHD payload: the record after the change (the Record itself, not
// a copy), or for a Delete the record before it with "deleted":true added as its last field.
func Schd(c *FlightChange) []byte {
	if c.Op != Delete {
		return c.Record
	}
	head := bytes.TrimSuffix(bytes.TrimSpace(c.Record), []byte("}"))
	return append(append(make([]byte, 0, len(head)+16), head...), `,"deleted":true}`...)
}

// Notify renders the REDIS_NOTIFY payload: {"type":"delete","FLID":n} for a Delete;
// {"type":"schedule","FLID":n} with "scheduleStart" and "scheduleEnd" (RFC 3339 in UTC) when
// there is a Window, for a schedule's insert or update; else {"type":"update","FLID":n} with
// "updatedFields" {key:new,…} when a field changed. It fails only on a window time that JSON
// cannot carry (a year outside 0–9999), as json.Marshal does.
func Notify(c *FlightChange) ([]byte, error) {
	switch {
	case c.Op == Delete:
		out := append(make([]byte, 0, 48), `{"type":"delete","FLID":`...)
		return append(strconv.AppendInt(out, c.FLID, 10), '}'), nil
	case c.Schedule:
		out := append(make([]byte, 0, 128), `{"type":"schedule","FLID":`...)
		out = strconv.AppendInt(out, c.FLID, 10)
		if w := c.Window; w != nil {
			var err error
			out = append(out, `,"scheduleStart":`...)
			if out, err = appendTime(out, w.From); err != nil {
				return nil, fmt.Errorf("notification of flight %d: scheduleStart: %w", c.FLID, err)
			}
			out = append(out, `,"scheduleEnd":`...)
			if out, err = appendTime(out, w.To); err != nil {
				return nil, fmt.Errorf("notification of flight %d: scheduleEnd: %w", c.FLID, err)
			}
		}
		return append(out, '}'), nil
	}
	size := 72 // {"type":"update","FLID":n,"updatedFields":{…}}
	for _, ch := range c.Changes {
		size += len(ch.Key) + len(ch.New) + 4
	}
	out := append(make([]byte, 0, size), `{"type":"update","FLID":`...)
	out = strconv.AppendInt(out, c.FLID, 10)
	if len(c.Changes) > 0 {
		out = append(out, `,"updatedFields":{`...)
		for i, ch := range c.Changes {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendString(out, ch.Key)
			out = append(out, ':')
			out = appendValue(out, ch.New)
		}
		out = append(out, '}')
	}
	return append(out, '}'), nil
}

// ES renders the ES_FLIGHT event: kind es-upsert with the record (the Record itself), or
// es-delete with {"FLID":n} for a Delete.
func ES(c *FlightChange) (kind string, payload []byte) {
	if c.Op == Delete {
		out := append(make([]byte, 0, 32), `{"FLID":`...)
		return KindESDelete, append(strconv.AppendInt(out, c.FLID, 10), '}')
	}
	return KindESUpsert, c.Record
}

// appendValue appends the JSON value v, or null when it is empty.
func appendValue(dst, v []byte) []byte {
	if len(v) == 0 {
		return append(dst, null...)
	}
	return append(dst, v...)
}

// appendString appends s as a JSON string the way json.Marshal writes it (HTML characters
// escaped, invalid UTF-8 as \ufffd): as it is between quotes when it is printable ASCII with
// nothing to escape, the case of every SIS key, else through json.Marshal itself.
func appendString(dst []byte, s string) []byte {
	if plain(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(s) // a string always marshals
	return append(dst, b...)
}

// plain reports whether json.Marshal writes s between quotes as it is.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendTime appends t in UTC as json.Marshal writes a time.Time (quoted RFC 3339 with the
// fraction of a second it has), failing where json.Marshal fails: a year outside 0–9999.
func appendTime(dst []byte, t time.Time) ([]byte, error) {
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("year %d outside of range [0,9999]", y)
	}
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"'), nil
}
