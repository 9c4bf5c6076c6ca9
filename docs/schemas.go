// Package docs holds the JSON Schemas of the payloads msgx delivers (docs/schemas/*.json,
// described in docs/payloads.md), embedded, and validates a payload against them: the
// contract its consumers build on, checked by the tests on what each target really sent.
// The binary does not import it.
package docs

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schemas are the files of docs/schemas: NAME.vN.json, one per payload and version.
//
//go:embed schemas/*.json
var Schemas embed.FS

// BaseURL is what every schema's $id starts with; a schema's $id is BaseURL + its file name.
const BaseURL = "https://msgx.local/schemas/"

// The payloads' schema names (without version), as ValidatePayload takes them.
const (
	KafkaFlop         = "kafka-flop"          // a KAFKA_FLOP record value: the envelope around a flop payload
	KafkaSchd         = "kafka-schd"          // a KAFKA_SCHD record value: an array of schd payloads
	KafkaHeaders      = "kafka-headers"       // the headers of any Kafka record, as an object
	RedisNotify       = "redis-notify"        // a REDIS_NOTIFY message: the envelope around a notify payload
	RedisNotifyLegacy = "redis-notify-legacy" // a format: legacy message: the legacy's FlightNotificationDTO
	ESFlight          = "es-flight"           // an ES_FLIGHT document: the flight record
	ESBulkAction      = "es-bulk-action"      // an action line of an ES_FLIGHT _bulk request
	Webhook           = "webhook"             // a webhook body: the envelope around any payload
	WebhookHeaders    = "webhook-headers"     // a webhook request's headers, as an object
	Envelope          = "envelope"            // the delivery envelope, any kind
	FlightRecord      = "flight-record"       // the flight record
)

var compiled struct {
	once    sync.Once
	err     error
	files   map[string]string // name.vN → file name
	newest  map[string]string // name → name.vN of its highest version
	mu      sync.Mutex
	schemas map[string]*jsonschema.Schema
	c       *jsonschema.Compiler
}

// load reads every schema into one compiler, so that their $refs resolve among them (and
// nowhere else: no schema is fetched).
func load() error {
	compiled.once.Do(func() {
		compiled.files, compiled.newest = map[string]string{}, map[string]string{}
		compiled.schemas = map[string]*jsonschema.Schema{}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.AssertFormat()
		c.UseLoader(noLoader{})
		files, err := fs.Glob(Schemas, "schemas/*.json")
		if err != nil || len(files) == 0 {
			compiled.err = fmt.Errorf("docs/schemas: no schema files (%v)", err)
			return
		}
		version := map[string]int{}
		for _, f := range files {
			file := path.Base(f)
			name, v, ok := splitName(file)
			if !ok {
				compiled.err = fmt.Errorf("docs/schemas/%s: not NAME.vN.json", file)
				return
			}
			b, err := Schemas.ReadFile(f)
			if err != nil {
				compiled.err = err
				return
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				compiled.err = fmt.Errorf("docs/schemas/%s: %w", file, err)
				return
			}
			if id, _ := doc.(map[string]any)["$id"].(string); id != BaseURL+file {
				compiled.err = fmt.Errorf("docs/schemas/%s: $id %q, want %q", file, id, BaseURL+file)
				return
			}
			if err := c.AddResource(BaseURL+file, doc); err != nil {
				compiled.err = fmt.Errorf("docs/schemas/%s: %w", file, err)
				return
			}
			key := strings.TrimSuffix(file, ".json")
			compiled.files[key] = file
			if v > version[name] {
				version[name], compiled.newest[name] = v, key
			}
		}
		compiled.c = c
	})
	return compiled.err
}

// splitName splits "kafka-flop.v1.json" into "kafka-flop" and 1.
func splitName(file string) (name string, version int, ok bool) {
	base, found := strings.CutSuffix(file, ".json")
	if !found {
		return "", 0, false
	}
	i := strings.LastIndex(base, ".v")
	if i <= 0 {
		return "", 0, false
	}
	v, err := strconv.Atoi(base[i+2:])
	if err != nil || v < 1 || strconv.Itoa(v) != base[i+2:] {
		return "", 0, false
	}
	return base[:i], v, true
}

// noLoader refuses every URL the schemas do not define themselves.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s is not one of docs/schemas", url)
}

// Names returns every schema as NAME.vN (its file name without .json), sorted.
func Names() ([]string, error) {
	if err := load(); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(compiled.files))
	for k := range compiled.files {
		out = append(out, k)
	}
	slices.Sort(out)
	return out, nil
}

// Schema returns the compiled schema name: NAME.vN, or NAME for its highest version.
func Schema(name string) (*jsonschema.Schema, error) {
	if err := load(); err != nil {
		return nil, err
	}
	key := name
	if n, ok := compiled.newest[name]; ok {
		key = n
	}
	file, ok := compiled.files[key]
	if !ok {
		return nil, fmt.Errorf("no schema %q in docs/schemas", name)
	}
	compiled.mu.Lock()
	defer compiled.mu.Unlock()
	if s, ok := compiled.schemas[key]; ok {
		return s, nil
	}
	s, err := compiled.c.Compile(BaseURL + file)
	if err != nil {
		return nil, fmt.Errorf("compile docs/schemas/%s: %w", file, err)
	}
	compiled.schemas[key] = s
	return s, nil
}

// ValidatePayload checks that b is one JSON document that the schema name (NAME.vN, or NAME
// for its highest version: KafkaFlop, RedisNotify, …) accepts. The error names every place
// where it does not, and quotes the start of b.
func ValidatePayload(name string, b []byte) error {
	s, err := Schema(name)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s: not one JSON document: %w: %.200s", name, err, b)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("%s: %w\npayload: %.2000s", name, err, b)
	}
	return nil
}

// ValidateHeaders checks headers (name → value; a name given twice is one error) against the
// schema name (KafkaHeaders, WebhookHeaders).
func ValidateHeaders(name string, headers [][2]string) error {
	m := make(map[string]string, len(headers))
	for _, h := range headers {
		if _, dup := m[h[0]]; dup {
			return fmt.Errorf("%s: header %q appears twice", name, h[0])
		}
		m[h[0]] = h[1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return ValidatePayload(name, b)
}
