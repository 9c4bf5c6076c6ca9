package target

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"msgx/internal/legacyflop"
	"msgx/internal/targetconf"
)

// Defaults applied by Open to settings left empty.
const (
	// DefaultTimeout bounds one Send (for the webhook: one POST).
	DefaultTimeout = 10 * time.Second
	// DefaultRedisAddr is the Redis server used when addr is empty.
	DefaultRedisAddr = "127.0.0.1:6379"
	// DefaultElasticsearchAddress is the node used when addresses is empty.
	DefaultElasticsearchAddress = "http://127.0.0.1:9200"
	// DefaultKafkaMaxRecordBytes is a Kafka target's max-record-bytes when unset: what
	// franz-go's producer allows by default (ProducerBatchMaxBytes), which is also Kafka's
	// default max.message.bytes.
	DefaultKafkaMaxRecordBytes = 1000012
)

// Config is one target's settings (targetconf.Config, which the configuration holds).
type Config = targetconf.Config

// TLSConfig is the tls block of a network target.
type TLSConfig = targetconf.TLSConfig

// withDefaults returns c with the defaults applied for target name.
func withDefaults(c Config, name, dataDir string) Config {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	switch c.Sink {
	case targetconf.SinkKafka:
		if c.MaxRecordBytes == 0 {
			c.MaxRecordBytes = DefaultKafkaMaxRecordBytes
		}
		if c.Key == "" {
			c.Key = name
		}
	case targetconf.SinkRedis:
		if c.Addr == "" {
			c.Addr = DefaultRedisAddr
		}
		if c.Format == targetconf.FormatLegacy && c.Channel == "" {
			c.Channel = legacyflop.DefaultChannel
		}
	case targetconf.SinkRedisFlights:
		if c.Addr == "" {
			c.Addr = DefaultRedisAddr
		}
		if c.KeyPrefix == "" {
			c.KeyPrefix = DefaultKeyPrefix
		}
		if c.CopyOf == "" {
			c.CopyOf = targetconf.FlightProjectionSource
		}
	case targetconf.SinkElasticsearch:
		if len(c.Addresses) == 0 {
			c.Addresses = []string{DefaultElasticsearchAddress}
		}
	case targetconf.SinkFile:
		if c.Path == "" {
			c.Path = filepath.Join(dataDir, "outbox", name+".jsonl")
		}
	}
	return c
}

// Open validates c, applies its defaults and returns the sink for target name. dataDir is
// where a file sink's default path lives. Open does not contact the downstream system: a
// system that is down shows as errors from Send, so events wait instead of the start failing.
// A file sink creates its directory and opens its file.
func Open(ctx context.Context, name string, c Config, dataDir string) (Sink, error) {
	if err := c.Validate(name); err != nil {
		return nil, err
	}
	c = withDefaults(c, name, dataDir)
	tlsCfg, err := loadTLS(c.TLS)
	if err != nil {
		return nil, fmt.Errorf("targets.%s.tls: %w", name, err)
	}
	switch c.Sink {
	case targetconf.SinkKafka:
		return openKafka(name, c, tlsCfg)
	case targetconf.SinkRedis:
		return openRedis(name, c, tlsCfg), nil
	case targetconf.SinkElasticsearch:
		return openElasticsearch(name, c, tlsCfg)
	case targetconf.SinkWebhook:
		return openWebhook(name, c, tlsCfg), nil
	case targetconf.SinkRedisFlights:
		return openRedisFlights(name, c), nil
	default: // targetconf.SinkFile; Validate rejected anything else
		return openFile(ctx, name, c)
	}
}

// loggerOf returns c.Logger, or slog.Default() when it is nil.
func loggerOf(c Config) *slog.Logger {
	if c.Logger == nil {
		return slog.Default()
	}
	return c.Logger
}

// loadTLS builds the tls.Config of t, or nil when TLS is off.
func loadTLS(t TLSConfig) (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca-file %s: no PEM certificate in it", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("cert-file/key-file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// eventErr says which target and which event failed.
func eventErr(sink, name string, r Record, err error) error {
	return fmt.Errorf("%s target %s: event %d (msg %d, %s): %w", sink, name, r.EventID, r.MsgID, r.TypeTag, err)
}

// closedErr is what Send returns after Close.
func closedErr(sink, name string) error {
	return fmt.Errorf("%s target %s: sink is closed", sink, name)
}
