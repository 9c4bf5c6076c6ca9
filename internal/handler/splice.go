package handler

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"

	"msgx/internal/sis"
)

// Writing a changed record without encoding all of it: a FLOP changes one or two of a
// record's hundred fields, yet encodeRecord's json.Marshal walked every one of them (a third
// of a FLOP decision once the stored record came from the cache). encodeFrom re-encodes only
// the top-level fields whose values differ from the stored record's and copies the others'
// bytes from the stored encoding, which json.Marshal wrote from those same values.

// recField is one top-level field of FlightRecord's JSON, in the order json.Marshal writes
// them: its key, whether it is left out when empty, and where it is in the struct.
type recField struct {
	key       string
	omitEmpty bool
	index     []int
}

// recFields is FlightRecord's layout; recSpliceable is false when the type holds something
// the layout does not model (then encodeFrom always declines).
var recFields, recSpliceable = recordLayout()

func recordLayout() ([]recField, bool) {
	var out []recField
	seen := map[string]bool{}
	add := func(f reflect.StructField, index []int) bool {
		tag := f.Tag.Get("json")
		if tag == "-" {
			return true
		}
		name, opts, _ := strings.Cut(tag, ",")
		if opts != "" && opts != "omitempty" {
			return false // string, omitzero…: not modelled
		}
		if name == "" {
			name = f.Name
		}
		if seen[name] {
			return false // conflicting names: json.Marshal's rules, not modelled
		}
		seen[name] = true
		out = append(out, recField{key: name, omitEmpty: opts == "omitempty", index: index})
		return true
	}
	t := reflect.TypeFor[FlightRecord]()
	for i := range t.NumField() {
		f := t.Field(i)
		switch {
		case f.Anonymous && f.Type == reflect.TypeFor[sis.Flight]() && f.Tag.Get("json") == "":
			for j := range f.Type.NumField() {
				g := f.Type.Field(j)
				if g.Anonymous {
					return nil, false
				}
				if !g.IsExported() {
					continue
				}
				if !add(g, []int{i, j}) {
					return nil, false
				}
			}
		case f.Anonymous:
			return nil, false
		case !f.IsExported():
			continue
		default:
			if !add(f, []int{i}) {
				return nil, false
			}
		}
	}
	return out, true
}

var ufffd = []byte(`\ufffd`)

// encodeFrom returns encodeRecord(cur), given old, the canonical encoding of oldRec: the
// fields equal in both are copied from old, the others encoded. ok is false when it cannot
// be done so (no old record, a layout or an encoding it does not model, a string that is not
// valid UTF-8); then the caller encodes the whole record.
func encodeFrom(old []byte, oldRec, cur *FlightRecord) (b []byte, ok bool) {
	if !recSpliceable || old == nil || oldRec == nil || cur == nil || bytes.Contains(old, ufffd) {
		return nil, false
	}
	var buf [128]field
	fs, ok := splitFields(old, buf[:0])
	if !ok {
		return nil, false
	}
	ov, cv := reflect.ValueOf(oldRec).Elem(), reflect.ValueOf(cur).Elem()
	out := make([]byte, 0, len(old)+64)
	out = append(out, '{')
	emit := func(key string, val []byte) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, key...)
		out = append(out, '"', ':')
		out = append(out, val...)
	}
	k := 0
	for _, f := range recFields {
		var was []byte
		held := k < len(fs) && string(fs[k].key) == f.key
		if held {
			was = fs[k].val
			k++
		}
		a, c := fieldByIndex(ov, f.index), fieldByIndex(cv, f.index)
		if equalValue(a, c) {
			if held {
				emit(f.key, was)
			} else if !f.omitEmpty {
				return nil, false // old lacks a field json.Marshal always writes
			}
			continue
		}
		if f.omitEmpty && isEmptyValue(c) {
			continue
		}
		v, err := json.Marshal(c.Addr().Interface())
		if err != nil || bytes.Contains(v, ufffd) {
			return nil, false
		}
		emit(f.key, v)
	}
	if k != len(fs) {
		return nil, false // old has a field out of the layout's order
	}
	return append(out, '}'), true
}

func fieldByIndex(v reflect.Value, index []int) reflect.Value {
	for _, i := range index {
		v = v.Field(i)
	}
	return v
}

// isEmptyValue is encoding/json's test for omitempty.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// equalValue reports whether a and c (of one type) certainly encode alike: equal numbers
// (floats bit for bit: -0 and 0 differ), strings, pointers to
// equal values, lists equal item by item, nil only as nil, structs equal field by field
// (unexported fields too: a MarshalJSON may read them). Anything else (maps, interfaces) is
// taken as different, which only costs its encoding.
func equalValue(a, c reflect.Value) bool {
	switch a.Kind() {
	case reflect.String:
		return a.String() == c.String()
	case reflect.Bool:
		return a.Bool() == c.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == c.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == c.Uint()
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(c.Float())
	case reflect.Pointer:
		if a.IsNil() || c.IsNil() {
			return a.IsNil() && c.IsNil()
		}
		return a.Pointer() == c.Pointer() || equalValue(a.Elem(), c.Elem())
	case reflect.Slice:
		if a.IsNil() != c.IsNil() || a.Len() != c.Len() {
			return false
		}
		if a.Len() > 0 && a.Pointer() == c.Pointer() {
			return true
		}
		fallthrough
	case reflect.Array:
		for i := range a.Len() {
			if !equalValue(a.Index(i), c.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Struct:
		// time.Time too: its wall clock, monotonic part and location (the same, or equal).
		for i := range a.NumField() {
			if !equalValue(a.Field(i), c.Field(i)) {
				return false
			}
		}
		return true
	}
	return false
}
