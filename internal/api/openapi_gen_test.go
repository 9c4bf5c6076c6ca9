package api_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/pipeline"
)

// The OpenAPI document (docs/openapi/openapi.json) is written by this generator: the paths from the
// table below, the answers' schemas from the Go types the handlers encode (reflection: json
// tags, omitempty, pointers, slices and maps that encode as null). The file is kept in the
// repository and reviewed as a file; TestOpenAPIGenerated fails when it differs from what the
// generator writes, and `go test ./internal/api -run TestOpenAPIGenerated -update-openapi`
// rewrites it.
var updateOpenAPI = flag.Bool("update-openapi", false, "rewrite docs/openapi/openapi.json from the generator")

const openAPIFile = "../../docs/openapi/openapi.json"

func TestOpenAPIGenerated(t *testing.T) {
	b := generateOpenAPI(t)
	if *updateOpenAPI {
		if err := os.WriteFile(openAPIFile, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(openAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, b) {
		t.Fatalf("docs/openapi/openapi.json is not what the generator (openapi_gen_test.go) writes: run go test ./internal/api -run TestOpenAPIGenerated -update-openapi and review the difference")
	}
	if !bytes.Equal(have, api.OpenAPIDocument()) {
		t.Fatal("the document the server embeds is not docs/openapi/openapi.json")
	}
}

type obj = map[string]any

// schemaGen turns Go types into JSON Schema (2020-12, as OpenAPI 3.1 has it), each named
// struct once under components/schemas.
type schemaGen struct {
	t       *testing.T
	schemas obj
	named   map[reflect.Type]string
}

// enums are the named string types whose values are fixed.
var enums = map[reflect.Type][]string{
	reflect.TypeFor[pipeline.ProcStatus]():  {"PENDING", "SUCCEEDED", "SKIPPED", "FAILED", "DEAD"},
	reflect.TypeFor[pipeline.EventStatus](): {"PENDING", "SENT", "DEAD"},
}

// fieldTypes are the fields of the client's wire types whose schema is another type's: the
// ones whose values are fixed, which the client declares as strings (it imports nothing of
// msgx's) and the server fills from the enums above, and the status's sections, which the
// client keeps raw to decode one by one and which may be any JSON value.
var fieldTypes = map[string]reflect.Type{
	"Message.State":    reflect.TypeFor[pipeline.ProcStatus](),
	"ParkAnswer.From":  reflect.TypeFor[pipeline.ProcStatus](),
	"ParkAnswer.State": reflect.TypeFor[pipeline.ProcStatus](),
	"EventRow.State":   reflect.TypeFor[pipeline.EventStatus](),
	"Status.Extra":     reflect.TypeFor[map[string]any](),
}

// fieldType is the type whose schema a client field has (fieldTypes), ok=false when it has
// its own.
func fieldType(t reflect.Type, field string) (reflect.Type, bool) {
	e, ok := fieldTypes[t.Name()+"."+field]
	return e, ok && t.PkgPath() == "msgx/client"
}

func (g *schemaGen) of(t reflect.Type) obj {
	switch t {
	case reflect.TypeFor[time.Time]():
		return obj{"type": "string", "format": "date-time"}
	case reflect.TypeFor[json.RawMessage]():
		return anyValue("any JSON value, as stored")
	}
	if vs, ok := enums[t]; ok {
		return obj{"type": "string", "enum": vs}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return nullable(g.of(t.Elem()))
	case reflect.String:
		return obj{"type": "string"}
	case reflect.Bool:
		return obj{"type": "boolean"}
	case reflect.Int64:
		return obj{"type": "integer", "format": "int64"}
	case reflect.Int, reflect.Int32, reflect.Uint32, reflect.Uint64:
		return obj{"type": "integer"}
	case reflect.Float64, reflect.Float32:
		return obj{"type": "number"}
	case reflect.Interface:
		return anyValue("")
	case reflect.Slice:
		return nullable(obj{"type": "array", "items": g.of(t.Elem())})
	case reflect.Array:
		return obj{"type": "array", "items": g.of(t.Elem()), "minItems": t.Len(), "maxItems": t.Len()}
	case reflect.Map:
		m := obj{"type": "object", "additionalProperties": g.of(t.Elem())}
		if k := t.Key().Kind(); k >= reflect.Int && k <= reflect.Int64 {
			m["propertyNames"] = obj{"pattern": "^-?[0-9]+$"}
		}
		return nullable(m)
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		name, ok := g.named[t]
		if !ok {
			name = t.Name()
			if n, ok := schemaNames[t]; ok {
				name = n
			}
			for other, n := range g.named {
				if n == name {
					g.t.Fatalf("two types named %s: %v and %v", name, other, t)
				}
			}
			g.named[t] = name
			g.schemas[name] = obj{} // a recursive type finds its name
			g.schemas[name] = g.object(t)
		}
		return obj{"$ref": "#/components/schemas/" + name}
	}
	g.t.Fatalf("no schema for %v", t)
	return nil
}

// object is a struct's schema: its fields as encoding/json writes them (embedded structs'
// fields inline), required unless omitempty, and nothing else.
func (g *schemaGen) object(t reflect.Type) obj {
	props, req := obj{}, []string{}
	g.fields(t, props, &req)
	s := obj{"type": "object", "properties": props, "additionalProperties": false}
	if len(req) > 0 {
		s["required"] = req
	}
	return s
}

func (g *schemaGen) fields(t reflect.Type, props obj, req *[]string) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, props, req)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		omit := slices.Contains(strings.Split(opts, ","), "omitempty")
		if e, ok := fieldType(t, f.Name); ok {
			ft = e
		}
		s := g.of(ft)
		if omit {
			s = nonNull(s) // omitempty leaves out nil pointers, slices and maps
		} else {
			*req = append(*req, name)
		}
		props[name] = s
	}
}

// anyValue is any JSON value, null included (written out: kin-openapi's validator takes an
// empty schema as one that refuses null).
func anyValue(desc string) obj {
	s := obj{"type": []any{"object", "array", "string", "number", "boolean", "null"}}
	if desc != "" {
		s["description"] = desc
	}
	return s
}

// nullable lets s be null too.
func nullable(s obj) obj {
	if _, ok := s["$ref"]; ok {
		return obj{"anyOf": []any{s, obj{"type": "null"}}}
	}
	typ, ok := s["type"].(string)
	if !ok {
		return s // any value, or already nullable
	}
	out := obj{}
	for k, v := range s {
		out[k] = v
	}
	out["type"] = []any{typ, "null"}
	return out
}

// nonNull undoes nullable.
func nonNull(s obj) obj {
	if any, ok := s["anyOf"].([]any); ok && len(any) == 2 {
		return any[0].(obj)
	}
	if ts, ok := s["type"].([]any); ok {
		out := obj{}
		for k, v := range s {
			out[k] = v
		}
		out["type"] = ts[0]
		return out
	}
	return s
}

// schemaNames name the types whose Go name says too little out of its package.
var schemaNames = map[reflect.Type]string{
	reflect.TypeFor[client.Mismatch]():      "ConsistencyMismatch",
	reflect.TypeFor[client.Request]():       "Request",
	reflect.TypeFor[client.RequestSpec]():   "RequestSpec",
	reflect.TypeFor[client.Ack]():           "DeadAck",
	reflect.TypeFor[client.Pause]():         "Pause",
	reflect.TypeFor[client.ParkAnswer]():    "ParkResult",
	reflect.TypeFor[client.Head]():          "HeadInfo",
	reflect.TypeFor[client.Event]():         "EventBrief",
	reflect.TypeFor[client.RecentNote]():    "Problem",
	reflect.TypeFor[client.JobProgress]():   "JobProgress",
	reflect.TypeFor[client.JobKind]():       "JobKind",
	reflect.TypeFor[client.Job]():           "JobWithProgress",
	reflect.TypeFor[client.JobRow]():        "Job",
	reflect.TypeFor[client.ReplayItem]():    "PreviewItem",
	reflect.TypeFor[client.MessageReplay](): "ReplayAnswer",
}

// Roles, as routeRole (auth.go) gives them.
const (
	public   = "anonymous"
	viewer   = "viewer"
	operator = "operator"
	admin    = "admin"
)

// param is a query parameter.
type param struct {
	name, desc string
	schema     obj
}

func str(desc string) obj {
	return obj{"type": "string", "maxLength": api.MaxParamLen, "description": desc}
}

var (
	pLimit  = param{"limit", "at most this many items (default 100, clamped to 1..1000)", obj{"type": "integer"}}
	pAfter  = param{"after", "cursor: only ids above it", obj{"type": "integer", "format": "int64", "minimum": 0}}
	pBefore = param{"before", "cursor: only ids below it", obj{"type": "integer", "format": "int64", "minimum": 0}}
	pOrder  = param{"order", "desc (newest first, the default) or asc", obj{"type": "string", "enum": []any{"asc", "desc"}}}
	paging  = []param{pLimit, pBefore, pAfter, pOrder}
)

// answer is one answer of an operation: a JSON schema (json), a stream, text or HTML.
type answer struct {
	desc  string
	json  obj    // application/json
	media string // another media type, its body a string
	text  obj    // the schema of that string (nil: any string)
}

// op is one operation of the document.
type op struct {
	method, path, role, summary string
	query                       []param
	body                        obj  // a JSON request body
	bodyOptional                bool // the body may be left out
	ok                          map[int]answer
	errors                      []int // statuses answered with the error shape
}

func (g *schemaGen) ref(v any) obj { return g.of(reflect.TypeOf(v)) }

// listing is a listing's answer (writeList): items under key, then the paging.
func (g *schemaGen) listing(key string, item any) obj {
	return obj{
		"type": "object", "additionalProperties": false,
		"required": []any{key, "count", "limit", "order", "truncated", "next", "prev", "next_after"},
		"properties": obj{
			key:          obj{"type": "array", "items": g.ref(item)},
			"count":      obj{"type": "integer", "minimum": 0},
			"limit":      obj{"type": "integer", "minimum": 1, "maximum": api.MaxLimit},
			"order":      obj{"type": "string", "enum": []any{"asc", "desc"}},
			"truncated":  obj{"type": "boolean"},
			"next":       obj{"type": []any{"string", "null"}, "description": "the query parameters of the next page (before=41), null when nothing follows"},
			"prev":       obj{"type": []any{"string", "null"}, "description": "the query parameters of the page back (after=43)"},
			"next_after": obj{"type": []any{"integer", "null"}, "format": "int64", "description": "oldest first: the last item's id when more may follow"},
		},
	}
}

// wrap is {key: [item…]} with nothing else.
func (g *schemaGen) wrap(key string, item any) obj {
	return obj{"type": "object", "additionalProperties": false, "required": []any{key},
		"properties": obj{key: nullable(obj{"type": "array", "items": g.ref(item)})}}
}

func object(required []any, props obj) obj {
	return obj{"type": "object", "additionalProperties": false, "required": required, "properties": props}
}

func jsonOK(desc string, s obj) map[int]answer { return map[int]answer{200: {desc: desc, json: s}} }

func stream(desc string) map[int]answer {
	return map[int]answer{200: {desc: desc + ": a text/event-stream of `event: message` (a new row, its id the event's id) and `event: update` (a followed row again), with `: heartbeat` comments and `retry: 2000` (docs/api.md, Live lists)", media: "text/event-stream"}}
}

// routes is every route msgx serves besides the console's pages (GET / and GET /console/…).
func (g *schemaGen) routes() []op {
	anyObject := obj{"type": "object", "description": "free-form JSON object"}
	pauseBody := object([]any{}, obj{"reason": obj{"type": "string"}})
	pause := jsonOK("the pause now", g.ref(client.PauseAnswer{}))
	streamAfter := []param{pAfter}
	eventFilters := []param{
		{"target", "a delivery target's name (KAFKA_FLOP, …)", str("")},
		{"state", "PENDING, SENT or DEAD", obj{"type": "string", "enum": []any{"PENDING", "SENT", "DEAD"}}},
		{"flid", "the events of this flight", obj{"type": "integer", "format": "int64", "minimum": 1}},
		{"msg_id", "the events of this message", obj{"type": "integer", "format": "int64", "minimum": 1}},
	}
	reqState := param{"state", "REGISTERED, SENT, DONE or EXPIRED", obj{"type": "string", "enum": []any{"REGISTERED", "SENT", "DONE", "EXPIRED"}}}
	replayEvents := object([]any{"moved", "skipped", "dry_run", "note"}, obj{
		"moved":   obj{"type": "integer"},
		"skipped": obj{"type": "integer"},
		"dry_run": obj{"type": "boolean"},
		"note":    obj{"type": "string"},
		"ids":     obj{"type": "array", "items": obj{"type": "integer", "format": "int64"}, "description": "dry run: the ids that would move (up to 1,000)"},
		"items":   obj{"type": "array", "items": g.ref(client.ReplayItem{}), "description": "dry run: the first 200 described"},
	})
	session := jsonOK("who is logged in and the airport's zone", g.ref(client.Session{}))
	flightsOfDay := object([]any{"day", "today", "timezone", "count", "flights", "changed"}, obj{
		"day":      obj{"type": "string", "format": "date"},
		"today":    obj{"type": "string", "format": "date", "description": "the airport's date now"},
		"timezone": obj{"type": "string", "description": "the airport's zone (sis.timezone)"},
		"count":    obj{"type": "integer"},
		"flights":  obj{"type": "array", "items": g.flightRecord()},
		"changed": obj{"type": "object", "propertyNames": obj{"pattern": "^-?[0-9]+$"}, "description": "by FLID: when the record last changed",
			"additionalProperties": object([]any{"changed_at", "changed_age_s"}, obj{
				"changed_at":    obj{"type": "string", "format": "date-time"},
				"changed_age_s": obj{"type": "integer", "description": "whole seconds before the answer"}})},
	})
	flightsByNumber := object([]any{"flno", "days", "count", "flights"}, obj{
		"flno":    obj{"type": "string"},
		"days":    obj{"type": "array", "items": obj{"type": "string", "format": "date"}, "minItems": 2, "maxItems": 2},
		"count":   obj{"type": "integer"},
		"flights": obj{"type": "array", "items": g.flightRecord()},
	})
	asOfBoard := object([]any{"day", "today", "timezone", "as_of", "history_from", "messages", "count", "flights", "changed", "warnings"}, obj{
		"day":          obj{"type": "string", "format": "date"},
		"today":        obj{"type": "string", "format": "date"},
		"timezone":     obj{"type": "string"},
		"as_of":        obj{"type": "string", "format": "date-time", "description": "the instant read (UTC)"},
		"history_from": obj{"type": []any{"string", "null"}, "format": "date-time", "description": "the processing time of the oldest message kept"},
		"messages":     obj{"type": "integer", "description": "how many applied messages the board was folded from"},
		"count":        obj{"type": "integer"},
		"flights":      obj{"type": "array", "items": g.flightRecord()},
		"changed": obj{"type": "object", "propertyNames": obj{"pattern": "^-?[0-9]+$"}, "description": "by FLID: when the record last changed by as_of, and by which message",
			"additionalProperties": object([]any{"changed_at", "changed_age_s", "msg_id"}, obj{
				"changed_at":    obj{"type": "string", "format": "date-time"},
				"changed_age_s": obj{"type": "integer", "description": "whole seconds from changed_at to as_of"},
				"msg_id":        obj{"type": "integer", "format": "int64"}})},
		"warnings": obj{"type": "array", "items": obj{"type": "string"}},
	})
	beforeHistory := object([]any{"error", "code", "as_of", "history_from"}, obj{
		"error":        obj{"type": "string"},
		"code":         obj{"const": "before_history"},
		"as_of":        obj{"type": "string", "format": "date-time"},
		"history_from": obj{"type": "string", "format": "date-time"},
	})
	season := object([]any{"key", "version", "msg_id", "updated_at", "season"}, obj{
		"key":        obj{"type": "string"},
		"version":    obj{"type": "integer", "format": "int64"},
		"msg_id":     obj{"type": []any{"integer", "null"}, "format": "int64"},
		"updated_at": obj{"type": "string", "format": "date-time"},
		"season":     obj{"type": "object", "description": "the SCHS record"},
	})
	id := obj{"type": "object", "additionalProperties": false, "required": []any{"id"}, "properties": obj{"id": obj{"type": "integer", "format": "int64"}}}
	return []op{
		{method: "POST", path: "/cminmsgs/send", role: public, summary: "The inbox: store one SIS XML message for the pump (the README's HTTP table has its answers and limits)",
			ok:     map[int]answer{200: {desc: "stored: the message's CMINMSGS id, as text (the gateway's contract), or as {\"id\"} when Accept asks for application/json", json: id, media: "text/plain", text: obj{"type": "string", "pattern": "^[0-9]+$"}}},
			errors: []int{400, 403, 405, 409, 413, 415, 422, 500, 503}},
		{method: "GET", path: "/healthz", role: public, summary: "The database answers; whether the pump runs here",
			ok: jsonOK("healthy", object([]any{"status", "pump_running", "pump_paused"}, obj{
				"status": obj{"const": "ok"}, "pump_running": obj{"type": "boolean"}, "pump_paused": obj{"type": "boolean"}})),
			errors: []int{503}},
		{method: "GET", path: "/livez", role: public, summary: "The process serves HTTP (reads nothing)",
			ok: jsonOK("alive", object([]any{"status"}, obj{"status": obj{"const": "alive"}}))},
		{method: "GET", path: "/readyz", role: public, summary: "Ready: the database answers and a pump holds its lease",
			ok: map[int]answer{200: {desc: "ready", json: g.ref(client.Readiness{})}, 503: {desc: "not ready, with the reason", json: g.ref(client.Readiness{})}}},
		{method: "GET", path: "/metrics", role: viewer, summary: "Prometheus metrics", ok: map[int]answer{200: {desc: "the Prometheus text format", media: "text/plain"}}},
		{method: "GET", path: "/api/v1/openapi.json", role: viewer, summary: "This document", ok: jsonOK("the OpenAPI 3.1 document", obj{"type": "object"})},

		{method: "POST", path: "/api/v1/login", role: public, summary: "Log in with a token; sets the msgx_session cookie",
			body: object([]any{"token"}, obj{"token": obj{"type": "string"}}), ok: session, errors: []int{400, 401, 403, 415, 429}},
		{method: "POST", path: "/api/v1/logout", role: public, summary: "End the session and clear the cookie",
			ok: jsonOK("logged out", object([]any{"logged_out"}, obj{"logged_out": obj{"type": "boolean"}})), errors: []int{403}},
		{method: "GET", path: "/api/v1/me", role: viewer, summary: "Who is logged in (and the session's CSRF token)", ok: session},

		{method: "GET", path: "/api/v1/messages", role: viewer, summary: "Messages, newest first",
			query: append([]param{
				{"state", "PENDING, SUCCEEDED, SKIPPED, FAILED or DEAD", obj{"type": "string", "maxLength": api.MaxParamLen}},
				{"class", "an error class (MALFORMED, CODEC_ERROR, UNSUPPORTED, INFRA, EXHAUSTED, ORPHAN, REJECTED, PARKED)", str("")},
				{"flid", "every message that names this flight (0: no filter)", obj{"type": "integer", "format": "int64", "minimum": 0}},
				{"tag", "a type tag (FLOP-CHOT) or a TYPE alone (FLOP)", str("")},
				{"from", "taken at or after (RFC 3339 or a date, UTC)", str("")},
				{"to", "taken before (RFC 3339 or a date, UTC)", str("")},
				{"q", "a substring of the identity, last error, note or (newest 50,000) body", obj{"type": "string", "maxLength": api.MaxSearchLen}},
			}, paging...),
			ok: jsonOK("a page of messages", g.listing("messages", &client.Message{})), errors: []int{400}},
		{method: "GET", path: "/api/v1/messages/stream", role: viewer, summary: "Live list of messages", query: streamAfter, ok: stream("each Message"), errors: []int{400, 429}},
		{method: "GET", path: "/api/v1/messages/{id}", role: viewer, summary: "One message", ok: jsonOK("the message", g.ref(client.Message{})), errors: []int{400, 404}},
		{method: "GET", path: "/api/v1/messages/{id}/raw", role: viewer, summary: "The stored raw text, exactly",
			ok: map[int]answer{200: {desc: "the raw text (live or archived)", media: "text/plain"}}, errors: []int{400, 404}},
		{method: "GET", path: "/api/v1/messages/{id}/history", role: viewer, summary: "A message's outcomes and operators' actions, in order",
			ok: jsonOK("the message and its history", g.ref(client.MessageHistory{})), errors: []int{400, 404}},
		{method: "POST", path: "/api/v1/messages/{id}/park", role: operator, summary: "Set a message aside: DEAD with class PARKED",
			body: object([]any{"reason"}, obj{"reason": obj{"type": "string"}}),
			ok:   jsonOK("parked", g.ref(client.ParkAnswer{})), errors: []int{400, 404, 409, 413}},
		{method: "POST", path: "/api/v1/replay", role: operator, summary: "FAILED/DEAD messages of classes or ids back to PENDING (or a dry run)",
			body: g.ref(client.ReplayRequest{}), ok: jsonOK("what moved (or would)", g.ref(client.MessageReplay{})), errors: []int{400}},
		{method: "GET", path: "/api/v1/status", role: viewer, summary: "Counts, the head message, the pump and its pauses, and the sections of the other parts",
			ok: jsonOK("the status", g.ref(client.Status{}))},
		{method: "GET", path: "/api/v1/config", role: admin, summary: "The configuration, secrets masked",
			ok: jsonOK("the configuration", anyObject)},

		{method: "GET", path: "/api/v1/flights/{flid}/history", role: viewer, summary: "A flight's changes, oldest first",
			query: []param{pLimit, {"after", "an event id", pAfter.schema}},
			ok:    jsonOK("a page of changes", g.listing("changes", client.FlightChange{})), errors: []int{400}},
		{method: "GET", path: "/api/v1/audit", role: admin, summary: "The audit log, newest first", query: paging,
			ok: jsonOK("a page of entries", g.listing("audit", client.AuditEntry{})), errors: []int{400}},
		{method: "GET", path: "/api/v1/audit/stream", role: admin, summary: "Live list of the audit log", query: streamAfter, ok: stream("each audit entry"), errors: []int{400, 429}},
		{method: "POST", path: "/api/v1/pump/pause", role: operator, summary: "Pause the pump", body: pauseBody, bodyOptional: true, ok: pause, errors: []int{400}},
		{method: "POST", path: "/api/v1/pump/resume", role: operator, summary: "Resume the pump", body: pauseBody, bodyOptional: true, ok: pause, errors: []int{400}},
		{method: "POST", path: "/api/v1/targets/{name}/pause", role: operator, summary: "Pause a delivery target", body: pauseBody, bodyOptional: true, ok: pause, errors: []int{400}},
		{method: "POST", path: "/api/v1/targets/{name}/resume", role: operator, summary: "Resume a delivery target", body: pauseBody, bodyOptional: true, ok: pause, errors: []int{400}},
		{method: "GET", path: "/api/v1/pauses", role: viewer, summary: "Every pause", ok: jsonOK("the pauses", g.wrap("pauses", client.Pause{}))},

		{method: "GET", path: "/api/v1/events", role: viewer, summary: "Outbox events, newest first", query: append(eventFilters, paging...),
			ok: jsonOK("a page of events", g.listing("events", client.Event{})), errors: []int{400}},
		{method: "GET", path: "/api/v1/events/stream", role: viewer, summary: "Live list of events", query: append(eventFilters, pAfter),
			ok: stream("each Event"), errors: []int{400, 429}},
		{method: "GET", path: "/api/v1/events/{id}/payload", role: viewer, summary: "An event's payload as a target is delivered it",
			query: []param{{"target", "the target whose payload to give: the event rendered for it (its own row's, or the shared row's); without it, the event as stored (a shared event's canonical encoding)", str("")}},
			ok:    jsonOK("the payload", anyValue("the payload as the target is delivered it, or as stored (docs/payloads.md)")), errors: []int{400, 404}},
		{method: "POST", path: "/api/v1/events/replay", role: operator, summary: "DEAD events back to PENDING (or a dry run)",
			body: object([]any{}, obj{"target": obj{"type": "string"}, "ids": obj{"type": []any{"array", "null"}, "items": obj{"type": "integer", "format": "int64"}}, "dry_run": obj{"type": "boolean"}}),
			ok:   jsonOK("what moved (or would)", replayEvents), errors: []int{400}},

		{method: "POST", path: "/api/v1/dead/ack", role: operator, summary: "Acknowledge dead letters",
			body: g.ref(client.AckRequest{}), ok: jsonOK("what was acknowledged", g.ref(client.AckResult{})), errors: []int{400}},
		{method: "GET", path: "/api/v1/dead", role: viewer, summary: "Dead-letter counts and the newest acknowledgements",
			query: []param{{"kind", "message or event", obj{"type": "string", "enum": []any{"message", "event"}}}, pLimit},
			ok:    jsonOK("the counts and acknowledgements", g.ref(client.DeadSummary{})), errors: []int{400}},
		{method: "GET", path: "/api/v1/dead/stream", role: viewer, summary: "Live list of messages that go DEAD", query: streamAfter, ok: stream("each Message"), errors: []int{400, 429}},
		{method: "GET", path: "/api/v1/problems", role: viewer, summary: "Recent problems, newest first", query: []param{{"limit", "at most this many (1..1000)", obj{"type": "integer", "minimum": 1, "maximum": api.MaxLimit}}},
			ok: jsonOK("the problems", g.wrap("problems", client.RecentNote{})), errors: []int{400}},

		{method: "GET", path: "/api/v1/ref/{type}", role: viewer, summary: "The records of a reference TYPE",
			ok: jsonOK("the records", object([]any{"type", "records"}, obj{"type": obj{"type": "string"}, "records": nullable(obj{"type": "array", "items": g.ref(client.RefEntry{})})})), errors: []int{404}},
		{method: "GET", path: "/api/v1/ref/{type}/{key}", role: viewer, summary: "One reference record",
			ok: jsonOK("the record", g.ref(client.RefEntry{})), errors: []int{404}},

		{method: "POST", path: "/api/v1/jobs", role: admin, summary: "Start a job",
			body: object([]any{"kind"}, obj{"kind": obj{"type": "string"}, "params": obj{"type": "string"}}),
			ok:   jsonOK("the job queued", g.ref(client.JobRow{})), errors: []int{400, 409}},
		{method: "GET", path: "/api/v1/jobs", role: viewer, summary: "The newest 100 jobs and the one in hand",
			ok: jsonOK("the jobs", object([]any{"jobs", "running"}, obj{"jobs": obj{"type": "array", "items": g.ref(client.Job{})}, "running": g.ref(&client.JobProgress{})}))},
		{method: "GET", path: "/api/v1/jobs/stream", role: viewer, summary: "Live list of jobs", query: streamAfter, ok: stream("each Job"), errors: []int{400, 429}},
		{method: "GET", path: "/api/v1/jobs/kinds", role: viewer, summary: "Every job kind, whether it can run here and why not",
			ok: jsonOK("the kinds", g.ref(client.JobKinds{}))},
		{method: "GET", path: "/api/v1/jobs/{id}", role: viewer, summary: "One job", ok: jsonOK("the job", g.ref(client.Job{})), errors: []int{400, 404}},

		{method: "GET", path: "/api/v1/flights", role: viewer, summary: "The flights of a local day (live, or as of a past time), or of a flight number (flno)",
			query: []param{
				{"day", "a local date YYYY-MM-DD (default: today in the airport's zone)", str("")},
				{"flno", "a flight number (CA8241, CA8241A, CCA8241): its flights in the days around today, or in day", str("")},
				{"as_of", "the board as it stood then: a time of day on day (08:15), a local date and time (2026-12-06T08:15) or RFC 3339 with its offset", str("")},
				{"tz", "with as_of: the zone of a local as_of (UTC or an IANA name; default the airport's)", str("")},
			},
			ok: map[int]answer{
				200: {desc: "the flights of the day (live, or with as_of as they stood then), or (with flno) of the number", json: obj{"oneOf": []any{flightsOfDay, asOfBoard, flightsByNumber}}},
				409: {desc: "before_history: as_of is before the retained history, which starts at history_from", json: beforeHistory},
			},
			errors: []int{400}},
		{method: "GET", path: "/api/v1/flights/{flid}", role: viewer, summary: "One flight", ok: jsonOK("the flight", g.ref(client.FlightEntry{})), errors: []int{400, 404}},
		{method: "GET", path: "/api/v1/seasons", role: viewer, summary: "The seasons (SCHS)", ok: jsonOK("the seasons", object([]any{"seasons"}, obj{"seasons": obj{"type": "array", "items": season}}))},
		{method: "GET", path: "/api/v1/find", role: viewer, summary: "What a text names: flights, then messages",
			query: []param{
				{"q", "a FLID, flight number, registration, stand, gate or text", obj{"type": "string", "maxLength": api.MaxSearchLen}},
				{"limit", "at most this many hits of each kind (1..1000, default 50)", obj{"type": "integer", "minimum": 1, "maximum": api.MaxLimit}},
				{"tz", "the zone of the labels' times (UTC or an IANA name; default the airport's)", str("")},
			},
			ok: jsonOK("the hits", g.ref(client.FindAnswer{})), errors: []int{400}},

		{method: "POST", path: "/api/v1/requests", role: operator, summary: "Ask the AODB for data (RQRD, RQFD)",
			body: g.ref(client.RequestSpec{}), ok: map[int]answer{201: {desc: "the request", json: g.ref(client.Request{})}}, errors: []int{400, 409}},
		{method: "GET", path: "/api/v1/requests", role: viewer, summary: "Data requests, newest first", query: append([]param{reqState}, paging...),
			ok: jsonOK("a page of requests", g.listing("requests", client.Request{})), errors: []int{400}},
		{method: "GET", path: "/api/v1/requests/stream", role: viewer, summary: "Live list of data requests", query: []param{reqState, pAfter},
			ok: stream("each Request"), errors: []int{400, 429}},
		{method: "GET", path: "/api/v1/requests/{id}", role: viewer, summary: "One data request", ok: jsonOK("the request", g.ref(client.Request{})), errors: []int{400, 404}},
		{method: "POST", path: "/view/admin/data-request", role: operator, summary: "The legacy admin contract: {\"RQRD\":\"AIRL\"} or {\"RQFD\":\"\",\"STDB\":\"…\",\"STDE\":\"…\"}",
			body: obj{"type": "object", "additionalProperties": obj{"type": "string"}},
			ok:   jsonOK("queued", object([]any{"success", "request_id"}, obj{"success": obj{"const": true}, "request_id": obj{"type": "integer", "format": "int64"}})), errors: []int{400, 409}},

		{method: "GET", path: "/api/v1/console/throughput", role: viewer, summary: "Messages finished in each minute of the last hour (the console's chart)",
			ok: jsonOK("the counts", g.ref(client.Throughput{}))},
		{method: "GET", path: "/api/v1/console/messages/{id}/decoded", role: viewer, summary: "A message decoded as the pump decodes it (the console's view)",
			ok: jsonOK("the decoded message, or why it does not decode", g.ref(client.DecodedMessage{})), errors: []int{400, 404}},
		{method: "GET", path: "/api/v1/consistency", role: viewer, summary: "The last consistency report of the Redis projection (one run first if none); phase A or the REDIS_FLIGHT target",
			ok: jsonOK("the report", g.ref(client.ConsistencyReport{}))},
		{method: "POST", path: "/api/v1/consistency", role: operator, summary: "Compare the Redis projection with the database now",
			ok: jsonOK("the report", g.ref(client.ConsistencyReport{}))},
	}
}

// flightRecord is a flight's record as the flight store keeps it (docs/payloads.md).
func (g *schemaGen) flightRecord() obj {
	return obj{"type": "object", "required": []any{"FLID"}, "properties": obj{"FLID": obj{"type": "integer", "format": "int64"}},
		"description": "the flight's record: its SIS fields by name (docs/payloads.md)"}
}

// roleNote is what each role's operations say of access.
var roleNote = map[string]string{
	public:   "Open to anyone (the inbox subject to http.inbox-allow).",
	viewer:   "Role viewer or above.",
	operator: "Role operator or above; with the session cookie, X-CSRF-Token too.",
	admin:    "Role admin; with the session cookie, X-CSRF-Token too.",
}

var errorDesc = map[int]string{
	400: "bad input (code names it: bad_json, bad_limit, unknown_parameter, too_long, …)",
	401: "no or unknown credentials (unauthenticated, bad_token, session_expired)",
	403: "forbidden: role too weak, csrf, loopback_only, bad_host, foreign_origin, inbox_forbidden",
	404: "not found",
	405: "method not allowed",
	409: "conflict (the code says which)",
	413: "the body is too large",
	414: "the path is over 512 bytes",
	415: "unsupported media type or charset",
	422: "the message cannot be stored (unstorable)",
	429: "too many (streams, log-ins): Retry-After says when to try again",
	500: "internal error",
	503: "the database does not answer, or the inbox is busy",
}

func generateOpenAPI(t *testing.T) []byte {
	g := &schemaGen{t: t, schemas: obj{}, named: map[reflect.Type]string{}}
	g.schemas["Error"] = g.object(reflect.TypeFor[client.ErrorBody]())
	g.named[reflect.TypeFor[client.ErrorBody]()] = "Error"
	paths := obj{}
	for _, o := range g.routes() {
		item, _ := paths[o.path].(obj)
		if item == nil {
			item = obj{}
			paths[o.path] = item
		}
		op := obj{"summary": o.summary, "description": roleNote[o.role], "x-msgx-role": o.role,
			"operationId": operationID(o.method, o.path)}
		if o.role == public {
			op["security"] = []any{}
		}
		var params []any
		for _, name := range pathParams(o.path) {
			s := obj{"type": "string"}
			if name == "id" || name == "flid" {
				s = obj{"type": "integer", "format": "int64"}
			}
			params = append(params, obj{"name": name, "in": "path", "required": true, "schema": s})
		}
		for _, p := range o.query {
			s := obj{}
			for k, v := range p.schema {
				s[k] = v
			}
			if s["type"] == "string" && s["maxLength"] == nil && s["enum"] == nil {
				s["maxLength"] = api.MaxParamLen
			}
			delete(s, "description")
			params = append(params, obj{"name": p.name, "in": "query", "description": p.desc, "schema": s})
		}
		if params != nil {
			op["parameters"] = params
		}
		if o.body != nil {
			op["requestBody"] = obj{"required": !o.bodyOptional, "content": obj{"application/json": obj{"schema": o.body}}}
		}
		if o.path == "/cminmsgs/send" {
			xml := obj{"schema": obj{"type": "string", "description": "one SIS XML message (docs/sis-format.md); charset per docs/api.md, Inbox"}}
			op["requestBody"] = obj{"required": true, "content": obj{"application/xml": xml, "text/xml": xml, "text/plain": xml}}
		}
		resp := obj{}
		for code, a := range o.ok {
			content := obj{}
			if a.json != nil {
				content["application/json"] = obj{"schema": a.json}
			}
			if a.media != "" {
				text := a.text
				if text == nil {
					text = obj{"type": "string"}
				}
				content[a.media] = obj{"schema": text}
			}
			resp[fmt.Sprint(code)] = obj{"description": a.desc, "content": content}
		}
		errs := slices.Clone(o.errors)
		if strings.HasPrefix(o.path, "/api/") || o.path == "/metrics" || strings.HasPrefix(o.path, "/view/") {
			// Every route behind the access control: bounded input (400 too_long, 414),
			// credentials (401, 403), the database (500, 503), and 404 from a listener that
			// does not serve the API (http.admin-addr set: the inbox's listener).
			errs = append(errs, 400, 401, 403, 404, 414, 500, 503)
		}
		slices.Sort(errs)
		for _, code := range slices.Compact(errs) {
			if _, ok := resp[fmt.Sprint(code)]; !ok {
				resp[fmt.Sprint(code)] = obj{"$ref": fmt.Sprintf("#/components/responses/E%d", code)}
			}
		}
		op["responses"] = resp
		item[strings.ToLower(o.method)] = op
	}
	// A request body's fields may each be left out (encoding/json requires none; the handler
	// says what is missing): its types' schemas list no required fields.
	for _, name := range []string{"ReplayRequest", "AckRequest", "RequestSpec"} {
		delete(g.schemas[name].(obj), "required")
	}
	responses := obj{}
	for code, d := range errorDesc {
		r := obj{"description": d,
			"content": obj{"application/json": obj{"schema": obj{"$ref": "#/components/schemas/Error"}}}}
		switch code {
		case 401:
			r["headers"] = obj{"WWW-Authenticate": obj{"description": "Bearer realm=\"msgx\"", "schema": obj{"type": "string"}}}
		case 429, 503:
			r["headers"] = obj{"Retry-After": obj{"description": "seconds to wait before trying again (429, the inbox's 503s)", "schema": obj{"type": "integer"}}}
		}
		responses[fmt.Sprintf("E%d", code)] = r
	}
	doc := obj{
		"openapi": "3.1.0",
		"info": obj{"title": "msgx ops API and inbox", "version": "1",
			"description": "The ops API of msgx and its inbox (POST /cminmsgs/send). docs/api.md describes each route in prose; this document is written by internal/api/openapi_gen_test.go from the Go types the handlers encode, and served at GET /api/v1/openapi.json. Every error is {\"error\",\"code\"}. Times are RFC 3339 in UTC."},
		"servers": []any{obj{"url": "/"}},
		"paths":   paths,
		"components": obj{
			"schemas":   g.schemas,
			"responses": responses,
			"securitySchemes": obj{
				"bearer":  obj{"type": "http", "scheme": "bearer", "description": "Authorization: Bearer <secret>; auth.tokens holds sha256:<hex> of each secret"},
				"session": obj{"type": "apiKey", "in": "cookie", "name": api.SessionCookie, "description": "the console's session (POST /api/v1/login); a state-changing request sends the session's csrf_token in X-CSRF-Token"},
			},
		},
		"security": []any{obj{"bearer": []any{}}, obj{"session": []any{}}},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func pathParams(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, "/") {
		if strings.HasPrefix(seg, "{") {
			out = append(out, strings.Trim(seg, "{}"))
		}
	}
	return out
}

func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/api/v1"), "/") {
		seg = strings.Trim(seg, "{}.")
		for _, part := range strings.FieldsFunc(seg, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}
