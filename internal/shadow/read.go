// Package shadow compares the notifications msgx publishes in the legacy's shape
// (internal/legacyflop) with the ones the legacy itself publishes on its Redis channel FLOP,
// for `msgx shadow diff`: per flight, the fields each side changed and their final values,
// whether it deleted or scheduled the flight, and what only one side produced. It knows the
// legacy's bugs that docs/sis-format.md marks and msgx fixes on purpose (Rules), and does not report
// what they explain.
package shadow

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Note is one notification as read from a capture or a channel, with Jackson's embedded class
// names removed and times as instants.
type Note struct {
	Line          int    // 1-based position in its stream
	Raw           []byte // the payload as received from a channel (Subscribe only)
	Null          bool   // the payload was JSON null (the legacy's SCHD DEL and ADFT)
	Type          string // update | delete | schedule (add is taken as update)
	FlightID      *int64
	Fields        map[string]any // updatedFields, normalised (see normalise)
	Flights       []int64
	ScheduleStart *time.Time
	ScheduleEnd   *time.Time
	CreateTime    *time.Time
}

// javaClass matches a fully qualified Java class name, as Jackson's default typing writes it
// in front of a value (["java.util.ArrayList", […]]) or as an "@class" property.
var javaClass = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*\.[A-Z][A-Za-z0-9_$]*(\.[A-Z][A-Za-z0-9_$]*)*$`)

// ReadLines reads a capture of JSON lines (one notification a line; blank lines skipped).
func ReadLines(r io.Reader, loc *time.Location) ([]Note, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var out []Note
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		n, err := Parse(b, loc)
		if err != nil {
			return out, fmt.Errorf("line %d: %w", line, err)
		}
		n.Line = line
		out = append(out, n)
	}
	return out, sc.Err()
}

// Parse reads one notification. Local times without an offset ("2026-03-15 10:30:00") are
// taken in loc.
func Parse(b []byte, loc *time.Location) (Note, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Note{}, fmt.Errorf("not JSON: %w", err)
	}
	v = unwrap(v)
	if v == nil {
		return Note{Null: true}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Note{}, fmt.Errorf("not a notification object: %.80s", b)
	}
	n := Note{}
	n.Type, _ = m["type"].(string)
	n.Type = strings.ToLower(n.Type) // Jackson writes the NotificationType constant (UPDATE)
	switch n.Type {
	case "update", "delete", "schedule":
	case "add":
		n.Type = "update"
	default:
		return n, fmt.Errorf("type %v is not update, delete or schedule", m["type"])
	}
	if id, ok := toInt(m["flightId"]); ok {
		n.FlightID = &id
	}
	if f, ok := m["updatedFields"].(map[string]any); ok {
		n.Fields = map[string]any{}
		for k, x := range f {
			n.Fields[k] = normalise(k, x, loc)
		}
	}
	if list, ok := m["flights"].([]any); ok {
		for _, e := range list {
			if id, ok := flightOf(e); ok {
				n.Flights = append(n.Flights, id)
			}
		}
	}
	n.ScheduleStart = toTime(m["scheduleStart"], loc)
	n.ScheduleEnd = toTime(m["scheduleEnd"], loc)
	n.CreateTime = toTime(m["createTime"], loc)
	return n, nil
}

// unwrap removes Jackson's type information: an "@class" property, and a two-element array
// whose first element is a class name.
func unwrap(v any) any {
	switch x := v.(type) {
	case []any:
		if len(x) == 2 {
			if s, ok := x[0].(string); ok && javaClass.MatchString(s) {
				return unwrap(x[1])
			}
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = unwrap(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if k == "@class" {
				continue
			}
			out[k] = unwrap(e)
		}
		return out
	}
	return v
}

// flightOf reads an entry of a schedule's flights: a FLID, or a flight object carrying it
// (the legacy's FlightDTO holds it in its flight, an FmsFlight, as aodbId).
func flightOf(e any) (int64, bool) {
	if id, ok := toInt(e); ok {
		return id, true
	}
	m, ok := e.(map[string]any)
	if !ok {
		return 0, false
	}
	if f, ok := m["flight"].(map[string]any); ok {
		return flightOf(f)
	}
	for _, k := range []string{"FLID", "aodbId", "flid", "flightId"} {
		if id, ok := toInt(m[k]); ok {
			return id, true
		}
	}
	return 0, false
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// toTime reads epoch milliseconds, RFC 3339, or a local "2006-01-02 15:04:05" in loc.
func toTime(v any, loc *time.Location) *time.Time {
	var t time.Time
	switch x := v.(type) {
	case json.Number:
		ms, err := x.Int64()
		if err != nil {
			return nil
		}
		t = time.UnixMilli(ms).UTC()
	case string:
		var err error
		if t, err = time.Parse(time.RFC3339Nano, x); err != nil {
			if t, err = time.ParseInLocation(time.DateTime, x, loc); err != nil {
				return nil
			}
		}
		t = t.UTC()
	default:
		return nil
	}
	return &t
}

// Subscribe reads notifications published on channel until ctx ends, or until it has read
// limit of them (0: no limit). ready is called once the subscription is confirmed (nothing
// published before it is seen).
func Subscribe(ctx context.Context, rdb *redis.Client, channel string, loc *time.Location, limit int, ready func()) ([]Note, error) {
	sub := rdb.Subscribe(ctx, channel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		return nil, fmt.Errorf("subscribe to %s: %w", channel, err)
	}
	if ready != nil {
		ready()
	}
	ch := sub.Channel()
	var out []Note
	for {
		select {
		case <-ctx.Done():
			return out, nil
		case m, ok := <-ch:
			if !ok {
				return out, nil
			}
			n, err := Parse([]byte(m.Payload), loc)
			if err != nil {
				return out, fmt.Errorf("channel %s, message %d: %w", channel, len(out)+1, err)
			}
			n.Line, n.Raw = len(out)+1, []byte(m.Payload)
			out = append(out, n)
			if limit > 0 && len(out) >= limit {
				return out, nil
			}
		}
	}
}
