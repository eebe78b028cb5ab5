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
	}
	if _, err := c.mechanism(); err != nil {
		env.Fail("KAFKA_SASL_MECHANISM", "%v", err)
	}
	if c.Partitions < 1 || c.ReplicationFactor < 1 {
		env.Fail("KAFKA_TOPIC_PARTITIONS", "partitions and replication factor must be at least 1")
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

// Writer returns a synchronous writer that waits for all in-sync replicas and keys
// messages to partitions by hash, so one subject always lands on one partition.
func (c KafkaConfig) Writer() *kafka.Writer {
	return &kafka.Writer{
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
