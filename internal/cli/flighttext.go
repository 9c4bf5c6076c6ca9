package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"msgx/client"
	"strings"
	"time"
)

// field is one key of a JSON object and its value, in the object's order.
type field struct {
	Key   string
	Value json.RawMessage
}

// fieldsOf returns the keys of the JSON object b in their order (nil when b is not an object).
func fieldsOf(b []byte) []field {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []field
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		out = append(out, field{key, v})
	}
	return out
}

// WriteFlight writes a flight's record as labelled rows, one a field, in the record's order:
// times (RFC 3339 in the record) in z, a group (PSDT, CHOT, GTDT, …) as a row per entry with
// each part labelled by its SIS name, an object (FDIV, FRET, FLAB) as its labelled parts, a
// list (CSFL) as its items.
func WriteFlight(w io.Writer, e client.FlightEntry, z Zone) {
	fmt.Fprintf(w, "flight %d, day %s, version %d", e.FLID, e.Day, e.Version)
	if e.MsgID != nil {
		fmt.Fprintf(w, ", last changed by message %d", *e.MsgID)
	}
	if !e.UpdatedAt.IsZero() {
		fmt.Fprintf(w, " at %s", z.Cell(e.UpdatedAt))
	}
	fmt.Fprintf(w, " (times %s)\n", z.Name())
	fields := fieldsOf(e.Record)
	width := 4
	for _, f := range fields {
		width = max(width, len(f.Key))
	}
	for _, f := range fields {
		label := fmt.Sprintf("%-*s  ", width, f.Key)
		switch {
		case isArrayOf(f.Value, '{'):
			var entries []json.RawMessage
			json.Unmarshal(f.Value, &entries)
			if len(entries) == 0 {
				fmt.Fprintf(w, "%s(none)\n", label)
			}
			for i, en := range entries {
				if i > 0 {
					label = strings.Repeat(" ", width+2)
				}
				fmt.Fprintf(w, "%s%s\n", label, parts(en, z))
			}
		case isArrayOf(f.Value, 0):
			var items []json.RawMessage
			json.Unmarshal(f.Value, &items)
			vals := make([]string, len(items))
			for i, it := range items {
				vals[i] = scalar(it, z)
			}
			fmt.Fprintf(w, "%s%s\n", label, OrDash(strings.Join(vals, ", ")))
		case bytes.HasPrefix(bytes.TrimSpace(f.Value), []byte("{")):
			fmt.Fprintf(w, "%s%s\n", label, parts(f.Value, z))
		default:
			fmt.Fprintf(w, "%s%s\n", label, scalar(f.Value, z))
		}
	}
}

// parts writes an object's parts on one line, each labelled: "PSNO 1  PSST 212  STST
// 2026-12-03 14:00:00"; a nested list (VIPF's VIPT) in brackets.
func parts(b json.RawMessage, z Zone) string {
	var out []string
	for _, f := range fieldsOf(b) {
		v := scalar(f.Value, z)
		if isArrayOf(f.Value, 0) || isArrayOf(f.Value, '{') {
			var items []json.RawMessage
			json.Unmarshal(f.Value, &items)
			var vs []string
			for _, it := range items {
				if bytes.HasPrefix(bytes.TrimSpace(it), []byte("{")) {
					vs = append(vs, "("+parts(it, z)+")")
				} else {
					vs = append(vs, scalar(it, z))
				}
			}
			v = "[" + strings.Join(vs, " ") + "]"
		}
		out = append(out, f.Key+" "+v)
	}
	return strings.Join(out, "  ")
}

// isArrayOf reports whether b is a JSON array whose first item starts with first ('{': of
// objects; 0: of anything else); an empty array counts as one of objects.
func isArrayOf(b json.RawMessage, first byte) bool {
	var items []json.RawMessage
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '[' || json.Unmarshal(t, &items) != nil {
		return false
	}
	if len(items) == 0 {
		return first == '{'
	}
	isObj := bytes.HasPrefix(bytes.TrimSpace(items[0]), []byte("{"))
	return isObj == (first == '{')
}

// scalar writes a JSON value: a string as it is (an RFC 3339 time in z; "" as `""`), null as
// "-", anything else as its JSON.
func scalar(b json.RawMessage, z Zone) string {
	var s string
	if json.Unmarshal(b, &s) == nil {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil && strings.Contains(s, "T") {
			return z.Cell(t)
		}
		if s == "" {
			return `""`
		}
		return s
	}
	if t := bytes.TrimSpace(b); string(t) == "null" {
		return "-"
	}
	return string(bytes.TrimSpace(b))
}
