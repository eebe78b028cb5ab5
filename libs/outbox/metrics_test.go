package outbox_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/telemetry/metrictest"
	"github.com/customerapi/platform/libs/testwait"
)

// The age of the oldest unpublished row is what an operator alerts on when Kafka is away:
// it must keep growing while the relay waits, not stay at the age the row had when the
// relay first read it, and fall back to 0 once the rows are out. Each batch relayed is
// timed.
func TestOldestPendingAgeGrowsWhileKafkaIsDown(t *testing.T) {
	pool, wake := newPool(t)
	rec := newRecorder()
	rec.setFail(true)
	reg := prometheus.NewRegistry()
	startRelay(t, &outbox.Relay{Pool: pool, Publisher: rec, Log: quiet, Wakeup: wake, IdleWake: time.Minute,
		Metrics: outbox.NewMetrics(reg)})
	write(t, pool, "e1", "e2")
	// A gauge stuck at the age the rows had when the relay first read them stays near 0.
	testwait.For(t, 10*time.Second, "outbox_oldest_pending_seconds to grow past 1.2 s with the rows' age while Kafka is down",
		func() (bool, string) {
			age := metrictest.Sum(t, reg, "outbox_oldest_pending_seconds", nil)
			return age >= 1.2, fmt.Sprintf("%.2f s", age)
		})
	if n := histogramCount(t, reg, "outbox_relay_batch_duration_seconds"); n != 0 {
		t.Fatalf("%d batches timed while none was published", n)
	}
	rec.setFail(false)
	rec.wait(t, 2)
	testwait.For(t, 10*time.Second, "the age to return to 0 once the rows are published", func() (bool, string) {
		n, age := pending(t, pool), metrictest.Sum(t, reg, "outbox_oldest_pending_seconds", nil)
		return n == 0 && age == 0, fmt.Sprintf("%d rows, age %.2f s", n, age)
	})
	if n := histogramCount(t, reg, "outbox_relay_batch_duration_seconds"); n != 1 {
		t.Fatalf("outbox_relay_batch_duration_seconds counts %d batches, want 1", n)
	}
}

func histogramCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}
