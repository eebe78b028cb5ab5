package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/customerapi/platform/libs/events"
)

// LagMonitor reports how far each consumer group is behind, per topic and partition, as
// the broker sees it: the partition's end offset minus the group's committed offset
// (kafka_consumer_lag_messages{group, topic, partition}). It reads both from the broker
// every Interval rather than from the readers, so the value is right whichever replica
// holds the partition after a rebalance, every replica reports the same (take the max),
// and a partition no replica reads (every consumer down) still shows its growing lag.
// While the broker cannot be asked, no lag is reported (the outbox's backlog and the
// readiness checks show a broker outage).
type LagMonitor struct {
	Kafka events.KafkaConfig
	Log   *slog.Logger
	// Interval between reads (default 15s).
	Interval time.Duration

	mu      sync.Mutex
	groups  map[string][]string // group → topics
	lag     map[lagKey]int64
	polled  prometheus.Gauge
	failing bool
}

type lagKey struct {
	group, topic string
	partition    int
}

var lagDesc = prometheus.NewDesc("kafka_consumer_lag_messages",
	"Messages of a partition that the consumer group has not committed yet (end offset minus committed offset), read from the broker.",
	[]string{"group", "topic", "partition"}, nil)

// NewLagMonitor registers the lag metrics on r.
func NewLagMonitor(r prometheus.Registerer, cfg events.KafkaConfig, log *slog.Logger) *LagMonitor {
	m := &LagMonitor{Kafka: cfg, Log: log, groups: map[string][]string{}, lag: map[lagKey]int64{},
		polled: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kafka_consumer_lag_last_read_timestamp_seconds",
			Help: "When the consumer lag was last read from the broker (Unix time)."})}
	r.MustRegister(m, m.polled)
	return m
}

// Add watches a group's lag on the given topics.
func (m *LagMonitor) Add(group string, topics []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.groups[group] = append(m.groups[group], topics...)
}

// Describe implements prometheus.Collector.
func (m *LagMonitor) Describe(ch chan<- *prometheus.Desc) { ch <- lagDesc }

// Collect implements prometheus.Collector.
func (m *LagMonitor) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range m.lag {
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(v), k.group, k.topic, strconv.Itoa(k.partition))
	}
}

// Run reads the lag every Interval until ctx ends.
func (m *LagMonitor) Run(ctx context.Context) {
	every := m.Interval
	if every <= 0 {
		every = 15 * time.Second
	}
	transport := m.Kafka.Transport()
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(m.Kafka.Brokers...), Transport: transport, Timeout: 5 * time.Second}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.poll(ctx, client)
		t.Reset(every)
	}
}

func (m *LagMonitor) poll(ctx context.Context, client *kafka.Client) {
	m.mu.Lock()
	groups := make(map[string][]string, len(m.groups))
	for g, ts := range m.groups {
		groups[g] = append([]string(nil), ts...)
	}
	m.mu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lag, err := readLag(pctx, client, groups)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil && !m.failing {
			m.Log.Warn("consumer lag not read from the broker", slog.Any("error", err))
		}
		m.failing = true
		clear(m.lag) // unknown, rather than a value that is no longer true
		return
	}
	m.failing = false
	m.lag = lag
	m.polled.SetToCurrentTime()
}

// readLag asks the broker for the end offset of every partition of the groups' topics and
// the groups' committed offsets, and returns the difference per group, topic and
// partition. A partition the group has committed nothing on counts from its first offset.
func readLag(ctx context.Context, client *kafka.Client, groups map[string][]string) (map[lagKey]int64, error) {
	var topics []string
	seen := map[string]bool{}
	for _, ts := range groups {
		for _, t := range ts {
			if !seen[t] {
				seen[t] = true
				topics = append(topics, t)
			}
		}
	}
	sort.Strings(topics)
	if len(topics) == 0 {
		return map[lagKey]int64{}, nil
	}
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	partitions := map[string][]int{}
	first, last := map[string][]kafka.OffsetRequest{}, map[string][]kafka.OffsetRequest{}
	for _, t := range meta.Topics {
		if t.Error != nil {
			if errors.Is(t.Error, kafka.UnknownTopicOrPartition) {
				continue // not created yet: nothing to lag behind
			}
			return nil, fmt.Errorf("metadata of %s: %w", t.Name, t.Error)
		}
		for _, p := range t.Partitions {
			partitions[t.Name] = append(partitions[t.Name], p.ID)
			first[t.Name] = append(first[t.Name], kafka.FirstOffsetOf(p.ID))
			last[t.Name] = append(last[t.Name], kafka.LastOffsetOf(p.ID))
		}
	}
	ends, err := offsets(ctx, client, last, func(p kafka.PartitionOffsets) int64 { return p.LastOffset })
	if err != nil {
		return nil, err
	}
	starts, err := offsets(ctx, client, first, func(p kafka.PartitionOffsets) int64 { return p.FirstOffset })
	if err != nil {
		return nil, err
	}
	out := map[lagKey]int64{}
	for group, ts := range groups {
		req := &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{}}
		for _, t := range ts {
			if len(partitions[t]) > 0 {
				req.Topics[t] = partitions[t]
			}
		}
		if len(req.Topics) == 0 {
			continue
		}
		resp, err := client.OffsetFetch(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("committed offsets of %s: %w", group, err)
		}
		if errors.Is(resp.Error, kafka.GroupIdNotFound) {
			// A group that has never committed (some brokers say so instead of -1).
			resp.Error, resp.Topics = nil, map[string][]kafka.OffsetFetchPartition{}
			for t, ps := range req.Topics {
				for _, p := range ps {
					resp.Topics[t] = append(resp.Topics[t], kafka.OffsetFetchPartition{Partition: p, CommittedOffset: -1})
				}
			}
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("committed offsets of %s: %w", group, resp.Error)
		}
		for t, ps := range resp.Topics {
			for _, p := range ps {
				if p.Error != nil {
					return nil, fmt.Errorf("committed offset of %s on %s/%d: %w", group, t, p.Partition, p.Error)
				}
				k := lagKey{group: group, topic: t, partition: p.Partition}
				from := p.CommittedOffset
				if from < 0 {
					from = starts[k.tp()]
				}
				out[k] = max(0, ends[k.tp()]-from)
			}
		}
	}
	return out, nil
}

type topicPartition struct {
	topic     string
	partition int
}

func (k lagKey) tp() topicPartition { return topicPartition{k.topic, k.partition} }

func offsets(ctx context.Context, client *kafka.Client, req map[string][]kafka.OffsetRequest,
	pick func(kafka.PartitionOffsets) int64) (map[topicPartition]int64, error) {
	out := map[topicPartition]int64{}
	if len(req) == 0 {
		return out, nil
	}
	resp, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: req})
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	for t, ps := range resp.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return nil, fmt.Errorf("offsets of %s/%d: %w", t, p.Partition, p.Error)
			}
			out[topicPartition{t, p.Partition}] = pick(p)
		}
	}
	return out, nil
}
