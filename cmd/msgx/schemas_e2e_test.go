package main_test

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"msgx/docs"
)

// capturedPayload is a payload a target sent, with the schema it must match.
type capturedPayload struct {
	schema string // docs schema name
	where  string // target and event, for the error
	body   []byte
}

// payloadsOf returns the payloads of what a target sent: a Kafka record's headers and value,
// a Redis message, an Elasticsearch action and its document, a webhook POST's headers and
// body.
func payloadsOf(d delivery) []capturedPayload {
	switch d.Sink {
	case "kafka":
		h, _ := json.Marshal(headerObject(d.Headers))
		value := docs.KafkaFlop
		if d.Target == "KAFKA_SCHD" {
			value = docs.KafkaSchd
		}
		return []capturedPayload{{docs.KafkaHeaders, d.Where + " headers", h}, {value, d.Where, d.Body}}
	case "redis":
		if d.Target == "LEGACY_FLOP" {
			return []capturedPayload{{docs.RedisNotifyLegacy, d.Where, d.Body}}
		}
		return []capturedPayload{{docs.RedisNotify, d.Where, d.Body}}
	case "elasticsearch":
		out := []capturedPayload{{docs.ESBulkAction, "ES_FLIGHT action", d.Action}}
		if d.Body != nil {
			out = append(out, capturedPayload{docs.ESFlight, d.Where, d.Body})
		}
		return out
	default:
		h, _ := json.Marshal(headerObject(d.Headers))
		return []capturedPayload{{docs.WebhookHeaders, d.Where + " headers", h}, {docs.Webhook, d.Where, d.Body}}
	}
}

// TestSimulatedDayPayloadsMatchTheSchemas runs a simulated day (`msgx simulate`, faults
// included) and an FDEL on a server whose every target sends for real — KAFKA_FLOP and
// KAFKA_SCHD to a kfake cluster, REDIS_NOTIFY and a format-legacy copy to Redis channels,
// ES_FLIGHT to a stand-in Elasticsearch node, and a webhook copying each of the four — and
// validates every payload they sent against docs/schemas: Kafka values and headers, both
// Redis shapes, the bulk actions and documents, the webhook bodies and headers. Each target
// delivered every event it marked SENT, and nothing went DEAD.
func TestSimulatedDayPayloadsMatchTheSchemas(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { simulatedDayPayloads(t, db) })
}

// TestSimulatedDayPayloadsMatchTheSchemasPhaseA is the same day in phase A: the records the
// payloads are made of come from the Redis flight store.
func TestSimulatedDayPayloadsMatchTheSchemasPhaseA(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { simulatedDayPayloads(t, db, phaseAEnv(t)...) })
}

func simulatedDayPayloads(t *testing.T, db dbEnv, env ...string) {
	rcv := newReceivers(t, "schemas:"+db.Name)
	cfg := filepath.Join(t.TempDir(), "msgx.yaml")
	if err := os.WriteFile(cfg, []byte("targets:\n"+rcv.targets()), 0o644); err != nil {
		t.Fatal(err)
	}
	s := db.start(t, append([]string{"MSGX_CONFIG=" + cfg, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_PIPELINE_BATCH_WAIT=200ms"}, env...)...)

	// The day: 40 flights over half an hour of schedule, every operation and fault kind, as
	// fast as the server takes them. A safety deadline, not a timing assertion.
	day := tomorrow(t).Format(time.DateOnly)
	run, out, _ := simulate(t, s, "--flights", "40", "--speed", "0", "--hours", "0.5", "--faults", "all", "--fault-rate", "0.02",
		"--seed", "37", "--day", day)
	if run.Failed != 0 || run.Flights != 40 {
		t.Fatalf("summary: %+v\n%s", run, out)
	}
	// A deletion too: the simulated day deletes no flight.
	ctx := t.Context()
	board, err := s.api().Board(ctx, day)
	if err != nil {
		t.Fatal(err)
	}
	var first struct {
		FLID int64 `json:"FLID"`
	}
	if len(board.Flights) == 0 || json.Unmarshal(board.Flights[0], &first) != nil {
		t.Fatalf("no flights on %s: %s", day, board.Flights)
	}
	fdel := s.post(e2eFlop(970001, "FDEL", first.FLID, "<FDEL/>"))
	s.await(fdel, "SUCCEEDED", state("SUCCEEDED", ""))

	// Wait until every message is finished and every target has nothing pending.
	targets := []string{"KAFKA_FLOP", "KAFKA_SCHD", "REDIS_NOTIFY", "LEGACY_FLOP", "ES_FLIGHT",
		"WEBHOOK_FLOP", "WEBHOOK_SCHD", "WEBHOOK_NOTIFY", "WEBHOOK_ES"}
	sent := s.awaitIdle(targets...)

	// Kafka: read both topics back from the start, up to the newest KAFKA_SCHD event (the
	// last batch record names it: a batch keeps the newest event of each flight).
	newest, err := s.api().Events(ctx, url.Values{"target": {"KAFKA_SCHD"}, "order": {"desc"}, "limit": {"1"}})
	if err != nil || len(newest.Events) != 1 {
		t.Fatalf("no KAFKA_SCHD event: %+v", newest)
	}
	rcv.consumeKafka(t, sent["KAFKA_FLOP"], newest.Events[0].EventID)

	// Every delivered event reached its receiver.
	rcv.awaitReceived(t, sent, "KAFKA_FLOP", "REDIS_NOTIFY", "ES_FLIGHT", "WEBHOOK_FLOP", "WEBHOOK_SCHD", "WEBHOOK_NOTIFY", "WEBHOOK_ES")

	// Validate every payload.
	var payloads []capturedPayload
	for _, d := range rcv.received() {
		payloads = append(payloads, payloadsOf(d)...)
	}
	perSchema := map[string]int{}
	failed := 0
	for _, p := range payloads {
		perSchema[p.schema]++
		if err := docs.ValidatePayload(p.schema, p.body); err != nil {
			if failed++; failed <= 5 {
				t.Errorf("%s: %v", p.where, err)
			}
		}
	}
	if failed > 5 {
		t.Errorf("… %d payloads in all do not match their schema", failed)
	}
	for _, schema := range []string{docs.KafkaFlop, docs.KafkaSchd, docs.KafkaHeaders, docs.RedisNotify, docs.RedisNotifyLegacy,
		docs.ESFlight, docs.ESBulkAction, docs.Webhook, docs.WebhookHeaders} {
		if perSchema[schema] == 0 {
			t.Errorf("no payload of schema %s was sent", schema)
		}
	}
	t.Logf("%d messages simulated; %d payloads validated: %v; SENT per target: %v", run.Messages, len(payloads), perSchema, sent)
}
