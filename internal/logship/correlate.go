package logship

import (
	"context"
	"log/slog"
	"strings"
)

// Correlate returns a handler that adds, before passing a record to next, trace_id to a record
// carrying msg_id (as an attribute of the record or of the logger) when t knows that
// message's trace id, and trace_ids (the distinct known ones) to a record carrying msg_ids.
// A record that already has a trace_id is left as it is.
func Correlate(next slog.Handler, t *Traces) slog.Handler {
	return &correlate{next: next, traces: t}
}

type correlate struct {
	next   slog.Handler
	traces *Traces
	msgID  int64 // from WithAttrs
	has    bool
	traced bool // WithAttrs gave a trace_id
}

func (c *correlate) Enabled(ctx context.Context, l slog.Level) bool { return c.next.Enabled(ctx, l) }

func (c *correlate) Handle(ctx context.Context, r slog.Record) error {
	id, has, traced := c.msgID, c.has, c.traced
	var ids []int64
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "msg_id":
			if v, ok := asInt(a.Value); ok {
				id, has = v, true
			}
		case "msg_ids":
			ids = asInts(a.Value)
		case "trace_id":
			traced = true
		}
		return true
	})
	var add []slog.Attr
	if has && !traced {
		if tr := c.traces.Lookup(id); tr != "" {
			add = append(add, slog.String("trace_id", tr))
		}
	}
	if len(ids) > 0 {
		seen := map[string]bool{}
		var trs []string
		for _, id := range ids {
			if tr := c.traces.Lookup(id); tr != "" && !seen[tr] {
				seen[tr] = true
				trs = append(trs, tr)
			}
		}
		if len(trs) > 0 {
			add = append(add, slog.Any("trace_ids", trs))
		}
	}
	if len(add) > 0 {
		r = r.Clone()
		r.AddAttrs(add...)
	}
	return c.next.Handle(ctx, r)
}

func (c *correlate) WithAttrs(as []slog.Attr) slog.Handler {
	n := *c
	n.next = c.next.WithAttrs(as)
	for _, a := range as {
		switch a.Key {
		case "msg_id":
			if v, ok := asInt(a.Value); ok {
				n.msgID, n.has = v, true
			}
		case "trace_id":
			n.traced = true
		}
	}
	return &n
}

func (c *correlate) WithGroup(name string) slog.Handler {
	n := *c
	n.next = c.next.WithGroup(name)
	return &n
}

func asInt(v slog.Value) (int64, bool) {
	switch v.Kind() {
	case slog.KindInt64:
		return v.Int64(), true
	case slog.KindUint64:
		return int64(v.Uint64()), true
	case slog.KindAny:
		switch x := v.Any().(type) {
		case int:
			return int64(x), true
		case int64:
			return x, true
		}
	}
	return 0, false
}

func asInts(v slog.Value) []int64 {
	if v.Kind() != slog.KindAny {
		return nil
	}
	switch x := v.Any().(type) {
	case []int64:
		return x
	case []int:
		out := make([]int64, len(x))
		for i, n := range x {
			out[i] = int64(n)
		}
		return out
	}
	return nil
}

// TraceID returns the trace id of a W3C traceparent header value
// (version-traceid-parentid-flags, lower-case hex), and false when the header is absent or not
// a valid traceparent (a trace or parent id of zeros, version ff, wrong lengths).
func TraceID(traceparent string) (string, bool) {
	h := strings.TrimSpace(traceparent)
	if len(h) < 55 || h[2] != '-' || h[35] != '-' || h[52] != '-' {
		return "", false
	}
	version, trace, parent, flags := h[0:2], h[3:35], h[36:52], h[53:55]
	if !isHex(version) || version == "ff" || !isHex(trace) || !isHex(parent) || !isHex(flags) {
		return "", false
	}
	// Version 00 is exactly 55 characters; a later version may add fields after a dash.
	if (version == "00" && len(h) != 55) || (len(h) > 55 && h[55] != '-') {
		return "", false
	}
	if strings.Trim(trace, "0") == "" || strings.Trim(parent, "0") == "" {
		return "", false
	}
	return trace, true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
