package outbox_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/libs/outbox"
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
	time.Sleep(1500 * time.Millisecond)
	if age := metric(t, reg, "outbox_oldest_pending_seconds", nil); age < 1.2 {
		t.Fatalf("outbox_oldest_pending_seconds = %.2f after 1.5 s of Kafka down, want it to grow with the rows' age", age)
	}
	if n := histogramCount(t, reg, "outbox_relay_batch_duration_seconds"); n != 0 {
		t.Fatalf("%d batches timed while none was published", n)
	}
	rec.setFail(false)
	rec.wait(t, 2)
	waitFor(t, "the age returns to 0 once the rows are published", func() bool {
		return pending(t, pool) == 0 && metric(t, reg, "outbox_oldest_pending_seconds", nil) == 0
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
