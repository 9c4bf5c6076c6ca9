package handler

import (
	"reflect"
	"time"
)

// fixup completes a deep copy: dst has been assigned src (a shallow copy) and fixup gives
// dst its own copy of every pointer, slice and map src reaches, keeping nil as nil and empty
// as empty, so that the copy encodes exactly as the original does.
type fixup func(dst, src reflect.Value)

// recordFixup deep-copies a FlightRecord; nil when the type holds something fixupOf cannot
// copy (an interface, a channel, a function, an unexported reference), then cloneRecord
// refuses and the caller decodes a second time as before.
var recordFixup, recordCloneable = func() (fixup, bool) {
	f, ok := fixupOf(reflect.TypeFor[FlightRecord]())
	return f, ok
}()

// cloneRecord returns a deep copy of r, or ok=false when the record type cannot be copied so.
func cloneRecord(r *FlightRecord) (*FlightRecord, bool) {
	if !recordCloneable {
		return nil, false
	}
	c := new(FlightRecord)
	*c = *r
	if recordFixup != nil {
		recordFixup(reflect.ValueOf(c).Elem(), reflect.ValueOf(r).Elem())
	}
	return c, true
}

var timeType = reflect.TypeFor[time.Time]()

// fixupOf returns the fixup of type t: nil when a plain assignment already copies it deeply
// (numbers, strings, time.Time, whose only reference is its immutable Location), ok=false
// when t cannot be copied field by field.
func fixupOf(t reflect.Type) (fixup, bool) {
	switch t.Kind() {
	case reflect.Pointer:
		return pointerFixup(t)
	case reflect.Slice:
		return sliceFixup(t)
	case reflect.Map:
		return mapFixup(t)
	case reflect.Array:
		return arrayFixup(t)
	case reflect.Struct:
		return structFixup(t)
	case reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return nil, false
	default:
		return nil, true
	}
}

// pointerFixup is fixupOf a pointer type t: the copy points to a copy of the element.
func pointerFixup(t reflect.Type) (fixup, bool) {
	ef, ok := fixupOf(t.Elem())
	if !ok {
		return nil, false
	}
	return func(d, s reflect.Value) {
		if s.IsNil() {
			return
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(s.Elem())
		if ef != nil {
			ef(p.Elem(), s.Elem())
		}
		d.Set(p)
	}, true
}

// sliceFixup is fixupOf a slice type t: the copy has its own backing array.
func sliceFixup(t reflect.Type) (fixup, bool) {
	ef, ok := fixupOf(t.Elem())
	if !ok {
		return nil, false
	}
	return func(d, s reflect.Value) {
		if s.IsNil() {
			return
		}
		n := reflect.MakeSlice(t, s.Len(), s.Len())
		reflect.Copy(n, s)
		if ef != nil {
			for i := range s.Len() {
				ef(n.Index(i), s.Index(i))
			}
		}
		d.Set(n)
	}, true
}

// mapFixup is fixupOf a map type t whose keys need no fixup: the copy is a map of its own.
func mapFixup(t reflect.Type) (fixup, bool) {
	kf, okK := fixupOf(t.Key())
	ef, okE := fixupOf(t.Elem())
	if !okK || !okE || kf != nil {
		return nil, false
	}
	return func(d, s reflect.Value) {
		if s.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(t, s.Len())
		it := s.MapRange()
		for it.Next() {
			v := reflect.New(t.Elem()).Elem()
			v.Set(it.Value())
			if ef != nil {
				ef(v, it.Value())
			}
			m.SetMapIndex(it.Key(), v)
		}
		d.Set(m)
	}, true
}

// arrayFixup is fixupOf an array type t: each element is fixed up in place.
func arrayFixup(t reflect.Type) (fixup, bool) {
	ef, ok := fixupOf(t.Elem())
	if !ok || ef == nil {
		return nil, ok
	}
	return func(d, s reflect.Value) {
		for i := range s.Len() {
			ef(d.Index(i), s.Index(i))
		}
	}, true
}

// structFixup is fixupOf a struct type t: each field that needs it is fixed up, which must
// then be exported.
func structFixup(t reflect.Type) (fixup, bool) {
	if t == timeType {
		return nil, true
	}
	type field struct {
		i int
		f fixup
	}
	var fs []field
	for i := range t.NumField() {
		sf := t.Field(i)
		f, ok := fixupOf(sf.Type)
		if !ok {
			return nil, false
		}
		if f == nil {
			continue
		}
		if !sf.IsExported() {
			return nil, false
		}
		fs = append(fs, field{i, f})
	}
	if len(fs) == 0 {
		return nil, true
	}
	return func(d, s reflect.Value) {
		for _, f := range fs {
			f.f(d.Field(f.i), s.Field(f.i))
		}
	}, true
}
