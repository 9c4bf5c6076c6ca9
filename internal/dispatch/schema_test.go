package dispatch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"msgx/docs"
	"msgx/internal/dispatch"
	"msgx/internal/esbulk"
	"msgx/internal/event"
	"msgx/internal/handler"
	"msgx/internal/legacyflop"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
	"msgx/internal/store"
)

// schemaView is an in-memory handler view: the stored records by FLID.
type schemaView struct {
	flights map[int64][]byte
	zone    *time.Location
}

func (v *schemaView) Flight(_ context.Context, flid int64) ([]byte, bool, error) {
	b, ok := v.flights[flid]
	return b, ok, nil
}

func (v *schemaView) FlightsOf(_ context.Context, flids []int64) ([][]byte, error) {
	var out [][]byte
	for _, id := range flids {
		if b, ok := v.flights[id]; ok {
			out = append(out, b)
		}
	}
	return out, nil
}

func (v *schemaView) each(keep func(r map[string]any) bool) [][]byte {
	ids := make([]int64, 0, len(v.flights))
	for id := range v.flights {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var out [][]byte
	for _, id := range ids {
		var r map[string]any
		if json.Unmarshal(v.flights[id], &r) == nil && keep(r) {
			out = append(out, v.flights[id])
		}
	}
	return out
}

func (v *schemaView) FlightsBetween(_ context.Context, from, to time.Time) ([][]byte, error) {
	return v.each(func(r map[string]any) bool {
		sodt, err := time.Parse(time.RFC3339, fmt.Sprint(r["SODT"]))
		return err == nil && !sodt.Before(from) && !sodt.After(to)
	}), nil
}

func (v *schemaView) CodeShareFlights(context.Context) ([][]byte, error) {
	return v.each(func(r map[string]any) bool { return r["MAID"] != nil }), nil
}

func (v *schemaView) CodeSharesOf(_ context.Context, masters []int64) ([][]byte, error) {
	return v.each(func(r map[string]any) bool {
		m, ok := r["MAID"].(float64)
		return ok && slices.Contains(masters, int64(m))
	}), nil
}

func (v *schemaView) RefKeys(context.Context, string) ([]string, error) { return nil, nil }
func (v *schemaView) Now() time.Time                                    { return time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC) }
func (v *schemaView) Location() *time.Location                          { return v.zone }

// payloadCheck decides SIS messages on a view, applies them as the store would, and checks
// every payload each target would send for their events against docs/schemas.
type payloadCheck struct {
	t       *testing.T
	zone    *time.Location
	view    *schemaView
	reg     *handler.Registry
	eventID int64
	msgID   int64
	schd    []dispatch.Event // the KAFKA_SCHD events, for the batches
	kinds   map[string]int   // payloads checked per schema
}

func newPayloadCheck(t *testing.T) *payloadCheck {
	zone, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	return &payloadCheck{t: t, zone: zone, reg: handler.Default(handler.Options{}), kinds: map[string]int{},
		view: &schemaView{flights: map[int64][]byte{}, zone: zone}, eventID: 1 << 40, msgID: 1 << 30}
}

// reset forgets the stored flights.
func (c *payloadCheck) reset() { c.view.flights = map[int64][]byte{} }

// apply decides raw, stores its flight writes and checks its events; it returns the events.
func (c *payloadCheck) apply(name string, raw []byte) []pipeline.Event {
	c.t.Helper()
	msg, err := sis.Decode(raw, sis.Options{Location: c.zone})
	if err != nil {
		c.t.Fatalf("%s: decode: %v", name, err)
	}
	h, ok := c.reg.Lookup(msg.Tag())
	if !ok {
		c.t.Fatalf("%s: no handler for %s", name, msg.Tag())
	}
	d, err := h.Decide(context.Background(), c.view, msg)
	if err != nil {
		c.t.Fatalf("%s: %v", name, err)
	}
	for _, w := range d.Flights {
		if w.Delete {
			delete(c.view.flights, w.FLID)
		} else {
			c.view.flights[w.FLID] = w.Record
		}
	}
	c.msgID++
	for _, e := range d.Events {
		for _, r := range c.delivered(e) {
			c.check(name, msg.Tag(), r)
		}
	}
	return d.Events
}

// delivered returns e as each of the four targets is delivered it: a shared event rendered
// for each (event.Render), any other as it is.
func (c *payloadCheck) delivered(e pipeline.Event) []pipeline.Event {
	c.t.Helper()
	if e.Target != event.Shared {
		return []pipeline.Event{e}
	}
	ch, err := event.Decode(e.Payload)
	if err != nil {
		c.t.Fatalf("flight %s: %v", e.Key, err)
	}
	var out []pipeline.Event
	for _, t := range handler.Targets {
		kind, p, err := event.Render(t, &ch)
		if err != nil {
			c.t.Fatalf("flight %s for %s: %v", e.Key, t, err)
		}
		out = append(out, pipeline.Event{Target: t, Kind: kind, Key: e.Key, Payload: p})
	}
	return out
}

func (c *payloadCheck) validate(where, schema string, b []byte) {
	c.t.Helper()
	c.kinds[schema]++
	if err := docs.ValidatePayload(schema, b); err != nil {
		c.t.Errorf("%s: %v", where, err)
	}
}

// check renders e as every target would send it and validates each.
func (c *payloadCheck) check(name, tag string, e pipeline.Event) {
	c.t.Helper()
	c.eventID++
	key := e.Key
	ev := store.Event{EventID: c.eventID, MsgID: c.msgID, TypeTag: tag, Target: e.Target, Kind: e.Kind, FlightKey: &key,
		CreatedAt: time.Date(2026, 3, 15, 1, 2, 3, 456789000, time.UTC), Raw: e.Payload}
	where := fmt.Sprintf("%s: event %s/%s of flight %s", name, e.Target, e.Kind, key)
	value, _, err := dispatch.Envelopes(&ev)
	if err != nil {
		c.t.Fatalf("%s: %v", where, err)
	}
	// Every event as a webhook copy of its target receives it.
	c.validate(where+" (webhook)", docs.Webhook, value)
	switch e.Target {
	case handler.TargetFlop:
		c.validate(where, docs.KafkaFlop, value)
	case handler.TargetSchd:
		c.validate(where+" (schd payload)", "schd", e.Payload)
		c.schd = append(c.schd, ev)
	case handler.TargetNotify:
		c.validate(where, docs.RedisNotify, value)
		le, err := legacyflop.ParseEvent(value)
		if err != nil {
			c.t.Fatalf("%s: %v", where, err)
		}
		n, ok, err := legacyflop.Convert(le)
		if err != nil {
			c.t.Fatalf("%s: legacy: %v", where, err)
		}
		if ok {
			b, err := n.Marshal()
			if err != nil {
				c.t.Fatalf("%s: legacy: %v", where, err)
			}
			c.validate(where+" (format: legacy)", docs.RedisNotifyLegacy, b)
		}
	case handler.TargetES:
		var b bytes.Buffer
		doc, _ := json.Marshal(json.RawMessage(e.Payload)) // compacted, as the sink sends it
		if err := esbulk.Append(&b, esbulk.Action{Delete: e.Kind == handler.KindESDelete, Index: "msgx-flight", ID: key, Version: ev.EventID, Doc: doc}); err != nil {
			c.t.Fatalf("%s: %v", where, err)
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		c.validate(where+" (bulk action)", docs.ESBulkAction, []byte(lines[0]))
		if e.Kind == handler.KindESUpsert {
			if len(lines) != 2 {
				c.t.Fatalf("%s: bulk lines %q", where, lines)
			}
			c.validate(where+" (document)", docs.ESFlight, []byte(lines[1]))
		} else {
			c.validate(where+" (es-delete payload)", "es-delete", e.Payload)
		}
	default:
		c.t.Errorf("%s: target %s has no schema", where, e.Target)
	}
}

// batches checks the KAFKA_SCHD batch values of every schd event so far: one record, and
// split at a small record size.
func (c *payloadCheck) batches() {
	c.t.Helper()
	for _, limit := range []int{0, 4096} {
		vals := dispatch.SchdValues(c.schd, limit)
		if len(vals) == 0 {
			c.t.Fatal("no KAFKA_SCHD batch")
		}
		for i, v := range vals {
			c.validate(fmt.Sprintf("KAFKA_SCHD batch record %d (limit %d)", i, limit), docs.KafkaSchd, v)
		}
	}
}

// TestPayloadsMatchTheirSchemas renders the events of every SIS test message (the snapshots
// and each FLOP STYP of testdata/, on the stored flights of testdata/schd/dnld.xml) and of
// edge messages (the largest numbers, 4-byte and CJK text, cleared fields, a code-share
// master, deletions by FDEL and by a snapshot) as each target sends them — the envelope on
// KAFKA_FLOP, REDIS_NOTIFY and webhooks, the legacy FLOP notification, the KAFKA_SCHD batch
// arrays, the ES_FLIGHT bulk action and document — and validates each against docs/schemas.
func TestPayloadsMatchTheirSchemas(t *testing.T) {
	c := newPayloadCheck(t)
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	const dnld = "../../testdata/schd/dnld.xml"
	flops, err := filepath.Glob("../../testdata/flop/*.xml")
	if err != nil || len(flops) < 40 {
		t.Fatalf("testdata/flop: %d messages, %v", len(flops), err)
	}
	for _, p := range append(flops, "../../testdata/schd/resp.xml", "../../testdata/schd/adft.xml", "../../testdata/schd/del.xml") {
		c.reset()
		c.apply(dnld, read(dnld))
		c.apply(p, read(p))
	}

	// Edge values.
	c.reset()
	at := func(d, h, m int) string {
		return strings.ToUpper(time.Date(2026, 3, d, h, m, 0, 0, c.zone).Format("02Jan061504"))
	}
	const maxID = math.MaxInt64
	master := fmt.Sprintf(`<FLTR><FLID>%d</FLID><ALCD>MU</ALCD><FLNO>MU5101</FLNO><MVIN>D</MVIN><SODT>%s</SODT>`+
		`<FLTY>W</FLTY><FLIN>M</FLIN><ACFT>789</ACFT><RENO>B-𠮷𠮷</RENO><TAOP>MU</TAOP><TAFL>MU5102</TAFL><TAID>%d</TAID>`+
		`<TRML>T2</TRML><MAXP>32767</MAXP><STND>101</STND><FHAG>2147483647</FHAG><PHAG>-2147483648</PHAG><MHAG>0</MHAG>`+
		`<PSDT PSNO="127"><PSST>101</PSST><STST>%s</STST><STET>%s</STET></PSDT>`+
		`<DELY CODE="雷" STRT="%s" DURA="9959">雷雨 thunderstorm 𠮷</DELY>`+
		`<SRVT><SRTC>FUEL</SRTC><SRQT>127</SRQT><SRPR>2147483647</SRPR><SANR>晚到</SANR></SRVT>`+
		`<VIPF><VPCD>V1</VPCD><VFES>32767</VFES><VIPT><VSCD>LNG</VSCD><VTQY>9223372036854775807</VTQY></VIPT></VIPF>`+
		`<REMC>备注 𠮷 "quoted" &lt;tag&gt; \back</REMC><VIPP>32767</VIPP><VIPR>127</VIPR><LBNO>2147483647</LBNO>`+
		`<LBWT>99999999.999</LBWT><PAXC>2147483647</PAXC><FDIV DDES="CAN" DDIR="TO">天气</FDIV></FLTR>`,
		maxID, at(16, 23, 59), maxID-1, at(16, 23, 0), at(16, 23, 59), at(16, 22, 0))
	codeShare := fmt.Sprintf(`<FLTR><FLID>%d</FLID><ALCD>FM</ALCD><FLNO>FM9101</FLNO><MVIN>D</MVIN><SODT>%s</SODT>`+
		`<FLTY>W</FLTY><FLIN>I</FLIN><ACFT>789</ACFT><CSOP>MU</CSOP><CSFT>MU5101</CSFT><MAID>%d</MAID></FLTR>`,
		maxID-2, at(16, 23, 59), int64(maxID))
	small := fmt.Sprintf(`<FLTR><FLID>1</FLID><ALCD>CA</ALCD><FLNO>CA1</FLNO><MVIN>A</MVIN><SODT>%s</SODT>`+
		`<FLTY>W</FLTY><FLIN>D</FLIN><ACFT>320</ACFT></FLTR>`, at(16, 0, 0))
	schd := func(seqn int, styp string, fltrs ...string) []byte {
		return []byte(fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
			`<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20260315000000</DTTM><TYPE>SCHD</TYPE><STYP>%s</STYP></META>`+
			`<SCHD><RECS>%d</RECS>%s</SCHD></MSG>`, seqn, styp, len(fltrs), strings.Join(fltrs, "")))
	}
	flop := func(seqn int, styp string, flid int64, body string) []byte {
		return []byte(fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
			`<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20260315%06d</DTTM><TYPE>FLOP</TYPE><STYP>%s</STYP></META>`+
			`<FLOP><FLID>%d</FLID><FFID>X</FFID>%s</FLOP></MSG>`, seqn, seqn%240000, styp, flid, body))
	}
	edges := []struct {
		name string
		raw  []byte
	}{
		{"edge snapshot", schd(1, "DNLD", master, codeShare, small)},
		{"clear ACFT", flop(2, "ACFT", maxID, "<ACFT/>")},
		{"clear FLTY", flop(3, "FLTY", maxID, "<FLTY></FLTY>")},
		{"clear FLIN", flop(4, "FLIN", maxID, "<FLIN/>")},
		{"clear STND", flop(5, "STND", maxID, "<STND/>")},
		{"clear DELY", flop(6, "DELY", maxID, "")},
		{"clear FDIV", flop(7, "FDIV", maxID, "<FDIV/>")},
		{"largest TAID", flop(8, "TAOP", maxID-2, fmt.Sprintf("<TAOP>MU</TAOP><TAFL>MU5101</TAFL><TAID>%d</TAID>", int64(maxID)))},
		{"CJK remark", flop(9, "REMC", 1, "<REMC>航班 𠮷 延误</REMC>")},
		{"code-share deleted", flop(10, "FDEL", maxID-2, "<FDEL/>")},
		{"snapshot drops flights", schd(11, "DNLD", small)},
		{"FDEL", flop(12, "FDEL", 1, "<FDEL/>")},
	}
	for _, e := range edges {
		if evs := c.apply(e.name, e.raw); len(evs) == 0 {
			t.Errorf("%s: no events", e.name)
		}
	}
	c.batches()
	for _, k := range []string{docs.Webhook, docs.KafkaFlop, docs.KafkaSchd, docs.RedisNotify, docs.RedisNotifyLegacy,
		docs.ESFlight, docs.ESBulkAction, "schd", "es-delete"} {
		if c.kinds[k] == 0 {
			t.Errorf("no payload checked against %s", k)
		}
	}
	t.Logf("payloads validated per schema: %v", c.kinds)
}
