// Package target holds the delivery sinks: Kafka (franz-go), Redis pub/sub (go-redis),
// Elasticsearch (_bulk, internal/esbulk), webhook (HTTP POST with an HMAC signature) and file
// (JSON lines). A sink only sends; ordering, retries and dead letters are the dispatcher's
// (internal/dispatch).
package target

import "context"

// Record is one delivery to a sink: a MSG_EVENT row (or, for the batched KAFKA_SCHD target,
// one batch) with the exact bytes the downstream system receives.
type Record struct {
	EventID int64  // the event's id (for a batch: the newest event of the batch)
	MsgID   int64  // the inbound message (CMINMSGS_ID) that produced it
	TypeTag string // the message's type tag, e.g. FLOP-CHOT
	Target  string // the target name, e.g. KAFKA_FLOP
	Kind    string // the payload kind, e.g. flop, schd, notify, es-upsert, es-delete
	Key     string // the flight key (FLID) where there is one: Kafka record key, ES document id
	Value   []byte // the JSON value to deliver
	Delete  bool   // the record deletes the document Key (Elasticsearch)
	// Document is what a document store indexes when it is not Value: the event's payload
	// (the flight record) without the delivery envelope. Empty means Value.
	Document []byte
}

// Sink delivers records to one downstream system.
//
// Send delivers recs in order and returns how many leading records were delivered for sure
// before the first failure, with that failure. A failure that no retry can mend (a webhook's
// 400, say) is wrapped in a *pipeline.Error of class REJECTED; any other error is retried.
type Sink interface {
	Send(ctx context.Context, recs []Record) (int, error)
	Close() error
}

// ValueLimiter is implemented by a sink that bounds the size of one record. A caller that
// packs several events into one record (the KAFKA_SCHD batch) splits it so that no Value is
// longer than MaxValueBytes; a single event that cannot fit is refused before it is sent.
type ValueLimiter interface {
	// MaxValueBytes is the longest Value one Record may have: the sink's record size limit
	// less room for the record's key, headers and framing.
	MaxValueBytes() int
}

// Windowed is implemented by a sink that keeps many records in flight at once and still
// knows which leading ones were delivered: Kafka, whose idempotent producer pipelines several
// produce requests per broker without reordering or duplicating a partition. The dispatcher
// gives one Send of such a sink up to Window records (the whole run of a step) rather than
// Send calls of its send batch one after the other, each waiting for the last.
type Windowed interface {
	// Window is how many records one Send may carry.
	Window() int
}
