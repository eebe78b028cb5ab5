package consumer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/customerapi/platform/libs/consumer"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/testwait"
)

// The lag of a group is read from the broker per partition: events nobody has consumed
// yet count from the partition's start, and once the group has committed them the lag is
// 0 again, whichever process consumed them.
func TestLagMonitorReadsTheGroupsLagPerPartition(t *testing.T) {
	pool := newDB(t)
	broker := kafkatest.Start(t)
	cfg := broker.Config()
	publish(t, cfg, ev(t, "a", 1), ev(t, "b", 2), ev(t, "c", 3), ev(t, "d", 4), ev(t, "e", 5))

	reg := prometheus.NewRegistry()
	m := consumer.NewLagMonitor(reg, cfg, quiet)
	m.Interval = 100 * time.Millisecond
	m.Add("lagging", []string{"things"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	total := func() float64 {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		sum, series := 0.0, 0
		for _, f := range families {
			if f.GetName() != "kafka_consumer_lag_messages" {
				continue
			}
			for _, s := range f.GetMetric() {
				series++
				sum += s.GetGauge().GetValue()
				labels := map[string]string{}
				for _, l := range s.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["group"] != "lagging" || labels["topic"] != "things" || labels["partition"] == "" {
					t.Fatalf("series labels %v", labels)
				}
			}
		}
		if series == 0 {
			return -1
		}
		return sum
	}
	lag := func(want float64) func() (bool, string) {
		return func() (bool, string) {
			n := total()
			return n == want, fmt.Sprintf("a total lag of %v (-1: no series yet)", n)
		}
	}
	testwait.For(t, 20*time.Second, "a lag of 5 before anything is consumed", lag(5))

	run(t, &consumer.Consumer{Name: "lagging", Topics: []string{"things"}, Kafka: cfg, Pool: pool, Handler: record})
	testwait.For(t, 20*time.Second, "no lag once the group has committed every event", lag(0))

	// Every partition of the topic has its series, consumed or not.
	if n := testutil.CollectAndCount(m, "kafka_consumer_lag_messages"); n < 2 {
		t.Fatalf("%d partition series, want one per partition of the topic", n)
	}
}
