package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Encode writes c as its canonical JSON, version 1, its fields in this order:
//
//	{"v":1,"FLID":n,"op":"update","schedule":true,"window":[from,to],"changes":[[key,old,new],…],"record":{…}}
//
// "schedule" and "window" only when set; the window's times in UTC (RFC 3339, the fraction
// of a second they have), an empty value as null. Values and the record are written as they
// are, so they must be valid JSON (the handler's are: json.Marshal wrote them); Decode
// refuses an encoding whose values are not. It fails on an unknown Op, a Record that is not a
// JSON object, a key that is not valid UTF-8 and a window time JSON cannot carry.
func Encode(c *FlightChange) ([]byte, error) {
	if !c.Op.valid() {
		return nil, fmt.Errorf("encode flight %d: unknown op %q", c.FLID, c.Op)
	}
	if r := c.Record; len(r) < 2 || r[0] != '{' || r[len(r)-1] != '}' {
		return nil, fmt.Errorf("encode flight %d: the record is not a JSON object", c.FLID)
	}
	size := 96 + len(c.Record)
	for _, ch := range c.Changes {
		if !utf8.ValidString(ch.Key) {
			return nil, fmt.Errorf("encode flight %d: key %q is not valid UTF-8", c.FLID, ch.Key)
		}
		size += len(ch.Key) + len(ch.Old) + len(ch.New) + 8
	}
	out := make([]byte, 0, size)
	out = append(out, `{"v":`...)
	out = strconv.AppendInt(out, Version, 10)
	out = append(out, `,"FLID":`...)
	out = strconv.AppendInt(out, c.FLID, 10)
	out = append(out, `,"op":"`...)
	out = append(out, c.Op...)
	out = append(out, '"')
	if c.Schedule {
		out = append(out, `,"schedule":true`...)
	}
	if w := c.Window; w != nil {
		var err error
		out = append(out, `,"window":[`...)
		if out, err = appendTime(out, w.From); err != nil {
			return nil, fmt.Errorf("encode flight %d: window start: %w", c.FLID, err)
		}
		out = append(out, ',')
		if out, err = appendTime(out, w.To); err != nil {
			return nil, fmt.Errorf("encode flight %d: window end: %w", c.FLID, err)
		}
		out = append(out, ']')
	}
	out = append(out, `,"changes":[`...)
	for i, ch := range c.Changes {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '[')
		out = appendString(out, ch.Key)
		out = append(out, ',')
		out = appendValue(out, ch.Old)
		out = append(out, ',')
		out = appendValue(out, ch.New)
		out = append(out, ']')
	}
	out = append(out, `],"record":`...)
	out = append(out, c.Record...)
	return append(out, '}'), nil
}

// Decode reads an encoding Encode wrote. It accepts exactly the canonical bytes: anything
// else (another version, another order of the fields, whitespace between them, a value that
// is not valid JSON) is an error, so that Encode(Decode(b)) is b. The values and the record
// of the result share b's memory: b must not change while the FlightChange is in use.
func Decode(b []byte) (FlightChange, error) {
	c, err := parse(b)
	if err != nil {
		return FlightChange{}, fmt.Errorf("decode flight event: %w", err)
	}
	again, err := Encode(&c)
	if err != nil {
		return FlightChange{}, fmt.Errorf("decode flight event: %w", err)
	}
	if !bytes.Equal(again, b) {
		return FlightChange{}, errors.New("decode flight event: not in the canonical form")
	}
	return c, nil
}

// parser reads b from i on.
type parser struct {
	b []byte
	i int
}

var errSyntax = errors.New("not a flight event encoding")

// parse reads the fields of an encoding in their order; Decode checks the rest.
func parse(b []byte) (FlightChange, error) {
	var c FlightChange
	p := &parser{b: b}
	if !p.lit(`{"v":`) {
		return c, errSyntax
	}
	v, ok := p.int()
	if !ok {
		return c, errSyntax
	}
	if v != Version {
		return c, fmt.Errorf("version %d: this build reads version %d", v, Version)
	}
	if !p.lit(`,"FLID":`) {
		return c, errSyntax
	}
	if c.FLID, ok = p.int(); !ok {
		return c, errSyntax
	}
	if !p.lit(`,"op":`) {
		return c, errSyntax
	}
	op, ok := p.str()
	if !ok || !Op(op).valid() {
		return c, fmt.Errorf("flight %d: unknown op", c.FLID)
	}
	c.Op = Op(op)
	c.Schedule = p.lit(`,"schedule":true`)
	if p.lit(`,"window":[`) {
		from, ok1 := p.time()
		sep := p.lit(",")
		to, ok2 := p.time()
		if !ok1 || !sep || !ok2 || !p.lit("]") {
			return c, fmt.Errorf("flight %d: bad window", c.FLID)
		}
		c.Window = &Window{From: from, To: to}
	}
	if !p.lit(`,"changes":[`) {
		return c, errSyntax
	}
	for !p.lit("]") {
		if len(c.Changes) > 0 && !p.lit(",") {
			return c, errSyntax
		}
		if !p.lit("[") {
			return c, errSyntax
		}
		key, ok := p.str()
		if !ok || !p.lit(",") {
			return c, fmt.Errorf("flight %d: bad change", c.FLID)
		}
		old, ok1 := p.value()
		sep := p.lit(",")
		cur, ok2 := p.value()
		if !ok1 || !sep || !ok2 || !p.lit("]") {
			return c, fmt.Errorf("flight %d: bad change of %q", c.FLID, key)
		}
		c.Changes = append(c.Changes, Change{Key: key, Old: old, New: cur})
	}
	if !p.lit(`,"record":`) {
		return c, errSyntax
	}
	rec, ok := p.value()
	if !ok || !p.lit("}") || p.i != len(b) {
		return c, fmt.Errorf("flight %d: bad record", c.FLID)
	}
	c.Record = rec
	return c, nil
}

// lit consumes s when b continues with it.
func (p *parser) lit(s string) bool {
	if !bytes.HasPrefix(p.b[p.i:], []byte(s)) {
		return false
	}
	p.i += len(s)
	return true
}

// int reads a decimal integer.
func (p *parser) int() (int64, bool) {
	j := p.i
	if j < len(p.b) && p.b[j] == '-' {
		j++
	}
	for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
		j++
	}
	n, err := strconv.ParseInt(string(p.b[p.i:j]), 10, 64)
	if err != nil {
		return 0, false
	}
	p.i = j
	return n, true
}

// str reads a JSON string.
func (p *parser) str() (string, bool) {
	end := stringEnd(p.b, p.i)
	if end < 0 {
		return "", false
	}
	raw := p.b[p.i:end]
	p.i = end
	if s := string(raw[1 : len(raw)-1]); plain(s) {
		return s, true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// time reads a JSON string holding an RFC 3339 time.
func (p *parser) time() (time.Time, bool) {
	s, ok := p.str()
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t.UTC(), err == nil
}

// value reads a JSON value, which must be valid and must not start with white space; the
// result shares b's memory.
func (p *parser) value() (json.RawMessage, bool) {
	end := valueEnd(p.b, p.i)
	if end <= p.i {
		return nil, false
	}
	v := p.b[p.i:end:end]
	if !json.Valid(v) {
		return nil, false
	}
	p.i = end
	return json.RawMessage(v), true
}

// stringEnd returns the index just after the JSON string starting at b[i], or -1.
func stringEnd(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd returns the index just after the JSON value starting at b[i] (a scalar ends
// before the next ',', ']' or '}'), or -1; json.Valid checks what it spans.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case ' ', '\t', '\n', '\r':
		return -1
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != ']' && b[j] != '}' {
		j++
	}
	return j
}
