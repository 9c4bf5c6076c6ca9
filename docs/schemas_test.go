package docs_test

import (
	"strings"
	"testing"

	"msgx/docs"
)

// TestSchemasCompile: every file of docs/schemas is NAME.vN.json with that $id, and compiles
// (JSON Schema 2020-12, every $ref resolved among them).
func TestSchemasCompile(t *testing.T) {
	names, err := docs.Names()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 10 {
		t.Fatalf("only %d schemas: %v", len(names), names)
	}
	for _, n := range names {
		if _, err := docs.Schema(n); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

// TestSchemasAreLinkedFromPayloads: docs/payloads.md links every file of docs/schemas (as
// schemas/NAME.vN.json), so a schema added without its description fails; a link to one
// that does not exist fails TestDocLinksResolve.
func TestSchemasAreLinkedFromPayloads(t *testing.T) {
	names, err := docs.Names()
	if err != nil {
		t.Fatal(err)
	}
	page := read(t, "docs/payloads.md")
	for _, n := range names {
		if !strings.Contains(page, "](schemas/"+n+".json)") {
			t.Errorf("docs/payloads.md does not link schemas/%s.json", n)
		}
	}
}

// TestValidatePayloadRefuses: the validator says no, naming the place, to a payload that
// breaks its schema, to text that is not one JSON document, and to an unknown schema.
func TestValidatePayloadRefuses(t *testing.T) {
	good := `{"event_id":7,"msg_id":3,"type_tag":"FLOP-STND","target":"KAFKA_FLOP","kind":"flop","flight_key":"42",` +
		`"created_at":"2026-03-15T01:02:03.4567Z","payload":{"FLID":42,"op":"update","changes":{"STND":{"old":"101","new":null}}}}`
	if err := docs.ValidatePayload(docs.KafkaFlop, []byte(good)); err != nil {
		t.Fatalf("a valid flop refused: %v", err)
	}
	for name, bad := range map[string]string{
		"FLID as text":       strings.Replace(good, `"FLID":42`, `"FLID":"42"`, 1),
		"unknown field":      strings.Replace(good, `"STND":{`, `"STAND":{`, 1),
		"local time":         strings.Replace(good, `.4567Z`, `.4567+08:00`, 1),
		"nanoseconds":        strings.Replace(good, `.4567Z`, `.456789123Z`, 1),
		"kind of another":    strings.Replace(good, `"kind":"flop"`, `"kind":"notify"`, 1),
		"empty changes":      strings.Replace(good, `{"STND":{"old":"101","new":null}}`, `{}`, 1),
		"no flight key":      strings.Replace(good, `"flight_key":"42",`, ``, 1),
		"trailing data":      good + `{}`,
		"larger than int64":  strings.Replace(good, `"FLID":42`, `"FLID":9223372036854775808`, 1),
		"an extra top field": strings.Replace(good, `"kind":"flop",`, `"kind":"flop","extra":1,`, 1),
	} {
		if err := docs.ValidatePayload(docs.KafkaFlop, []byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := docs.ValidatePayload("kafka-flop.v9", []byte(good)); err == nil {
		t.Error("an unknown version: accepted")
	}
	if err := docs.ValidatePayload("kafka-flop.v1", []byte(good)); err != nil {
		t.Errorf("the explicit version: %v", err)
	}
}
