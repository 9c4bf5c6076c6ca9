package target

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"msgx/internal/pipeline"
	"msgx/internal/targetconf"
)

// kafkaSink produces to one topic with an idempotent, acks=all franz-go client.
type kafkaSink struct {
	name     string
	topic    string
	timeout  time.Duration
	key      []byte // for records without a key of their own
	maxBytes int    // max-record-bytes

	mu     sync.Mutex // one Send at a time, so records keep their order in the client
	cl     *kgo.Client
	closed bool
}

func kafkaOpts(c Config, tlsCfg *tls.Config) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.DefaultProduceTopic(c.Topic),
		// Idempotent writes are franz-go's default and stay on: the client's own retries
		// never duplicate or reorder a partition. They require acks from all in-sync replicas.
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// Send waits for its records; lingering would only add latency.
		kgo.ProducerLinger(0),
		// One record (with its key and headers) must fit in a batch of this size, or the
		// client fails it with MESSAGE_TOO_LARGE; MaxValueBytes tells the dispatcher.
		kgo.ProducerBatchMaxBytes(int32(c.MaxRecordBytes)),
	}
	// No record timeout of the client's own: a record fails when the context Send gives it
	// ends (after the timeout, and never while Send is still producing; see Send).
	if c.ClientID != "" {
		opts = append(opts, kgo.ClientID(c.ClientID))
	}
	if tlsCfg != nil {
		opts = append(opts, kgo.DialTLSConfig(tlsCfg))
	}
	if m := saslMechanism(c.SASL); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts
}

func saslMechanism(s targetconf.SASLConfig) sasl.Mechanism {
	switch s.Mechanism {
	case targetconf.SASLPlain:
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()
	case targetconf.SASLScramSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()
	case targetconf.SASLScramSHA512:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()
	}
	return nil
}

func openKafka(name string, c Config, tlsCfg *tls.Config) (Sink, error) {
	cl, err := kgo.NewClient(kafkaOpts(c, tlsCfg)...)
	if err != nil {
		return nil, fmt.Errorf("kafka target %s: %w", name, err)
	}
	return &kafkaSink{name: name, topic: c.Topic, timeout: c.Timeout, key: []byte(c.Key), maxBytes: c.MaxRecordBytes, cl: cl}, nil
}

// recordOverhead is what a record batch holding one record adds to the record's key and
// value, with room to spare: the batch header (61 bytes), the record's varint lengths,
// attributes and deltas, and the three headers (names, and values of at most 20 digits, 20
// digits and a type tag of at most 64 bytes).
const recordOverhead = 512

// maxFlightKeyBytes is the longest key a record can bring of its own: FLIGHT_KEY is 64
// characters of up to 4 bytes.
const maxFlightKeyBytes = 256

// MaxValueBytes implements ValueLimiter: max-record-bytes less the batch and record
// overhead and the longest key a record can carry.
func (k *kafkaSink) MaxValueBytes() int {
	return k.maxBytes - recordOverhead - max(len(k.key), maxFlightKeyBytes)
}

// kafkaWindow is how many records one Send of the Kafka sink may carry (Windowed): all are
// produced before any is waited for, so they travel in as many produce requests as the
// client needs (up to five in flight per broker with idempotence, franz-go's rule), where
// Sends of a hundred waited a round trip each.
const kafkaWindow = 1000

// Window implements Windowed.
func (k *kafkaSink) Window() int { return kafkaWindow }

// acks collects the promises of one Send. A promise may arrive after Send gave up waiting;
// it then only updates this struct, which nobody reads any more.
type acks struct {
	mu     sync.Mutex
	errs   []error
	done   []bool
	left   int  // records produced and not yet answered, plus those not yet produced
	failed bool // a record failed
	all    chan struct{}
}

// newAcks waits for n records.
func newAcks(n int) *acks {
	return &acks{errs: make([]error, n), done: make([]bool, n), left: n, all: make(chan struct{})}
}

func (a *acks) set(i int, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done[i] {
		return
	}
	a.done[i], a.errs[i] = true, err
	a.failed = a.failed || err != nil
	a.count(1)
}

// count takes n records off those waited for, and ends the wait when none is left.
func (a *acks) count(n int) {
	if a.left -= n; a.left == 0 {
		close(a.all)
	}
}

// anyFailed reports whether a record has failed.
func (a *acks) anyFailed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failed
}

// unproduced stops waiting for the records from i on: Send did not produce them.
func (a *acks) unproduced(i int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i < len(a.done) {
		a.count(len(a.done) - i)
	}
}

// Send produces recs in order and waits until each is acknowledged by all in-sync replicas,
// or the timeout passes. It returns the count of leading records acknowledged.
//
// A record whose request is in flight when the timeout passes is not cancelled (that would
// break the idempotent sequence); Send reports it as failed and the client keeps trying it,
// so it may still arrive, and the dispatcher's retry delivers it a second time, after the
// first copy. Consumers deduplicate on the event_id header.
//
// Per-flight order holds because no record is ever produced behind one the client is going
// to fail. The client fails a partition's records all at once, everything it holds for the
// partition, when its first record's context has ended and its request was answered (a
// refusal in an outage), and a record produced after that moment would reach Kafka ahead of
// the failed ones, which only the dispatcher's retry brings, after it. So Send produces
// nothing while records of an earlier Send are still in the client (it waits for them, up to
// its timeout, then fails as INFRA), its records' context does not end before the last of
// them is produced, and it stops producing at the first failure it learns of.
func (k *kafkaSink) Send(ctx context.Context, recs []Record) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return 0, closedErr(targetconf.SinkKafka, k.name)
	}
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	if err := k.cl.Flush(ctx); err != nil {
		return 0, eventErr(targetconf.SinkKafka, k.name, recs[0], fmt.Errorf(
			"produce to topic %s: records of an earlier send still pending in the client after %s: %w", k.topic, k.timeout, context.Cause(ctx)))
	}
	// The records' context ends with ctx, but not before the last record is produced.
	rctx, rcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer rcancel()

	a := newAcks(len(recs))
	for i, r := range recs {
		if a.anyFailed() {
			a.unproduced(i) // a record behind a failed one would overtake it
			break
		}
		kr := &kgo.Record{
			Topic: k.topic,
			Value: r.Value,
			Headers: []kgo.RecordHeader{
				{Key: "event_id", Value: []byte(strconv.FormatInt(r.EventID, 10))},
				{Key: "msg_id", Value: []byte(strconv.FormatInt(r.MsgID, 10))},
				{Key: "type_tag", Value: []byte(r.TypeTag)},
			},
		}
		kr.Key = k.key
		if r.Key != "" {
			kr.Key = []byte(r.Key)
		}
		k.cl.Produce(rctx, kr, func(_ *kgo.Record, err error) { a.set(i, err) })
	}
	context.AfterFunc(ctx, rcancel)
	select {
	case <-a.all:
	case <-ctx.Done():
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for n < len(recs) && a.done[n] && a.errs[n] == nil {
		n++
	}
	if n == len(recs) {
		return n, nil
	}
	err := a.errs[n]
	if !a.done[n] {
		err = fmt.Errorf("no acknowledgement within %s: %w", k.timeout, context.Cause(ctx))
	}
	err = eventErr(targetconf.SinkKafka, k.name, recs[n], fmt.Errorf("produce to topic %s: %w", k.topic, err))
	if kafkaRefused(err) {
		err = pipeline.Wrap(pipeline.Rejected, err)
	}
	return n, err
}

// kafkaRefused reports whether a produce error is about the record itself, so that no retry
// can deliver it: it can never fit the client's or the broker's size limit, or the broker's
// validation refuses it. Everything else (no broker, no leader, not enough replicas,
// authorization, an unknown topic, the delivery timeout) is a state of the cluster or of its
// configuration, retried (INFRA) until it is mended.
func kafkaRefused(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) ||
		errors.Is(err, kerr.InvalidRecord)
}

// Close fails what is still buffered and closes the client's connections.
func (k *kafkaSink) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.closed {
		k.closed = true
		k.cl.Close()
	}
	return nil
}
