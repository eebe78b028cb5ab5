package events

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/customerapi/platform/libs/config"
)

// KafkaConfig holds the broker connection settings of a process.
type KafkaConfig struct {
	// Brokers are host:port addresses (KAFKA_BROKERS, comma-separated).
	Brokers []string
	// TLS turns on TLS to the brokers (KAFKA_TLS).
	TLS bool
	// SASLMechanism is "", "PLAIN", "SCRAM-SHA-256" or "SCRAM-SHA-512" (KAFKA_SASL_MECHANISM),
	// with KAFKA_USERNAME and KAFKA_PASSWORD.
	SASLMechanism      string
	Username, Password string
	// Partitions and ReplicationFactor are used when a topic has to be created
	// (KAFKA_TOPIC_PARTITIONS, default 6; KAFKA_REPLICATION_FACTOR, default 1).
	Partitions        int
	ReplicationFactor int
	// MaxMessageBytes is the largest message the producer sends, counted as MessageSize
	// does (KAFKA_MAX_MESSAGE_BYTES, default DefaultMaxMessageBytes; 0 means the default).
	// It is the writer's BatchBytes and the outbox's write-time limit; keep it below the
	// broker's message.max.bytes and every topic's max.message.bytes.
	MaxMessageBytes int
}

// KafkaFromEnv reads the Kafka settings.
func KafkaFromEnv(env *config.Env) KafkaConfig {
	c := KafkaConfig{
		Brokers:           env.List("KAFKA_BROKERS", []string{"127.0.0.1:25092"}),
		TLS:               env.Bool("KAFKA_TLS", false),
		SASLMechanism:     env.String("KAFKA_SASL_MECHANISM", ""),
		Username:          env.String("KAFKA_USERNAME", ""),
		Password:          env.String("KAFKA_PASSWORD", ""),
		Partitions:        env.Int("KAFKA_TOPIC_PARTITIONS", 6),
		ReplicationFactor: env.Int("KAFKA_REPLICATION_FACTOR", 1),
		MaxMessageBytes:   env.Int("KAFKA_MAX_MESSAGE_BYTES", DefaultMaxMessageBytes),
	}
	if _, err := c.mechanism(); err != nil {
		env.Fail("KAFKA_SASL_MECHANISM", "%v", err)
	}
	if c.Partitions < 1 || c.ReplicationFactor < 1 {
		env.Fail("KAFKA_TOPIC_PARTITIONS", "partitions and replication factor must be at least 1")
	}
	if c.MaxMessageBytes < minMessageLimit || c.MaxMessageBytes > maxMessageLimit {
		env.Fail("KAFKA_MAX_MESSAGE_BYTES", "must be from %d to %d bytes", minMessageLimit, maxMessageLimit)
	}
	return c
}

func (c KafkaConfig) mechanism() (sasl.Mechanism, error) {
	switch c.SASLMechanism {
	case "":
		return nil, nil
	case "PLAIN":
		return plain.Mechanism{Username: c.Username, Password: c.Password}, nil
	case "SCRAM-SHA-256":
		return scram.Mechanism(scram.SHA256, c.Username, c.Password)
	case "SCRAM-SHA-512":
		return scram.Mechanism(scram.SHA512, c.Username, c.Password)
	}
	return nil, fmt.Errorf("unsupported mechanism %q", c.SASLMechanism)
}

func (c KafkaConfig) tlsConfig() *tls.Config {
	if !c.TLS {
		return nil
	}
	return &tls.Config{MinVersion: tls.VersionTLS12}
}

// Transport returns the transport for writers and admin clients.
func (c KafkaConfig) Transport() *kafka.Transport {
	mech, _ := c.mechanism()
	return &kafka.Transport{TLS: c.tlsConfig(), SASL: mech, DialTimeout: 5 * time.Second, ClientID: "customer-api"}
}

// Dialer returns the dialer for readers.
func (c KafkaConfig) Dialer() *kafka.Dialer {
	mech, _ := c.mechanism()
	return &kafka.Dialer{Timeout: 5 * time.Second, DualStack: true, TLS: c.tlsConfig(), SASLMechanism: mech, ClientID: "customer-api"}
}

// The range of KAFKA_MAX_MESSAGE_BYTES: below the minimum even the events of small changes
// would not fit; above the maximum the consumers, which fetch at most 10 MiB per
// partition, could not read a message.
const (
	minMessageLimit = 4096
	maxMessageLimit = 10 << 20
)

// MessageLimit is MaxMessageBytes, or DefaultMaxMessageBytes when unset.
func (c KafkaConfig) MessageLimit() int {
	if c.MaxMessageBytes <= 0 {
		return DefaultMaxMessageBytes
	}
	return c.MaxMessageBytes
}

// Writer returns a synchronous writer that waits for all in-sync replicas and keys
// messages to partitions by hash, so one subject always lands on one partition. Its
// BatchBytes, the most it puts in one produce request per partition, is MessageLimit: a
// larger message is refused before sending (kafka.MessageTooLargeError), and no batch of
// small ones exceeds what the broker takes.
func (c KafkaConfig) Writer() *kafka.Writer {
	return &kafka.Writer{
		BatchBytes:   int64(c.MessageLimit()),
		Addr:         kafka.TCP(c.Brokers...),
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 2 * time.Millisecond,
		BatchSize:    500,
		MaxAttempts:  3,
		WriteTimeout: 10 * time.Second,
		Transport:    c.Transport(),
	}
}

// EnsureTopics creates the topics that do not exist yet.
func (c KafkaConfig) EnsureTopics(ctx context.Context, topics ...string) error {
	transport := c.Transport()
	defer transport.CloseIdleConnections() // a one-off client: leave no connection behind
	client := &kafka.Client{Addr: kafka.TCP(c.Brokers...), Transport: transport, Timeout: 10 * time.Second}
	req := &kafka.CreateTopicsRequest{}
	for _, t := range topics {
		req.Topics = append(req.Topics, kafka.TopicConfig{Topic: t, NumPartitions: c.Partitions, ReplicationFactor: c.ReplicationFactor})
	}
	resp, err := client.CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("events: create topics: %w", err)
	}
	for t, terr := range resp.Errors {
		if terr != nil && !errors.Is(terr, kafka.TopicAlreadyExists) {
			return fmt.Errorf("events: create topic %s: %w", t, terr)
		}
	}
	return nil
}

// Probe is the readiness check of the brokers. It keeps one transport, and so one pool
// of connections, for its whole life: a check that built a transport per call left a
// connection open per call, so frequent probes (or unauthenticated /readyz calls that
// fan out to every service) piled up broker connections without bound.
type Probe struct {
	client    *kafka.Client
	transport *kafka.Transport
}

// NewProbe returns a probe of c's brokers; Close releases its connections.
func (c KafkaConfig) NewProbe() *Probe {
	t := c.Transport()
	t.IdleTimeout = time.Minute
	return &Probe{transport: t, client: &kafka.Client{Addr: kafka.TCP(c.Brokers...), Transport: t, Timeout: 2 * time.Second}}
}

// Check reaches a broker and reads the cluster's metadata.
func (p *Probe) Check(ctx context.Context) error {
	if _, err := p.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}}); err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	return nil
}

// Close closes the probe's idle connections.
func (p *Probe) Close() { p.transport.CloseIdleConnections() }
