package events

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

var (
	producerWrites = prometheus.NewDesc("kafka_producer_requests_total",
		"Produce requests the Kafka writer sent.", nil, nil)
	producerMessages = prometheus.NewDesc("kafka_producer_messages_total",
		"Messages the Kafka writer sent.", nil, nil)
	producerBytes = prometheus.NewDesc("kafka_producer_bytes_total",
		"Bytes of messages the Kafka writer sent.", nil, nil)
	producerErrors = prometheus.NewDesc("kafka_producer_errors_total",
		"Produce requests that failed (after the writer's own retries).", nil, nil)
	producerRetries = prometheus.NewDesc("kafka_producer_retries_total",
		"Produce requests the Kafka writer retried.", nil, nil)
)

// ProducerMetrics exports a kafka.Writer's statistics as Prometheus counters. The
// writer's Stats returns what happened since its previous call, so this collector must
// be the writer's only reader of Stats; it adds each call's numbers to running totals.
type ProducerMetrics struct {
	w *kafka.Writer

	mu                                       sync.Mutex
	writes, messages, bytes, errors, retries int64
}

// NewProducerMetrics returns the collector of w's statistics; register it once.
func NewProducerMetrics(w *kafka.Writer) *ProducerMetrics { return &ProducerMetrics{w: w} }

// Describe implements prometheus.Collector.
func (p *ProducerMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{producerWrites, producerMessages, producerBytes, producerErrors, producerRetries} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (p *ProducerMetrics) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	s := p.w.Stats()
	p.writes += s.Writes
	p.messages += s.Messages
	p.bytes += s.Bytes
	p.errors += s.Errors
	p.retries += s.Retries
	values := []int64{p.writes, p.messages, p.bytes, p.errors, p.retries}
	p.mu.Unlock()
	for i, d := range []*prometheus.Desc{producerWrites, producerMessages, producerBytes, producerErrors, producerRetries} {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(values[i]))
	}
}
