package postgres_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/testwait"
)

func gauge(t *testing.T, reg *prometheus.Registry, name string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != "pool" || m.GetLabel()[0].GetValue() != "things" {
				t.Fatalf("%s labels %v, want pool=things", name, m.GetLabel())
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// A pool's metrics show what saturation looks like: every connection acquired, a caller
// waiting for one, and how long acquiring took. Its queries inside a recorded trace get
// database spans, beside the tracer the pool already had.
func TestPoolMetricsAndSpans(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := postgres.NewPoolMetrics(reg)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	pool, err := postgres.ConnectWith(ctx, url+"&pool_max_conns=1", func(c *pgxpool.Config) {
		m.Observe(c, "things", tp)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	m.Watch("things", pool)

	held, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		c, err := pool.Acquire(ctx) // waits: the only connection is held
		if err == nil {
			c.Release()
		}
		got <- err
	}()
	testwait.For(t, 5*time.Second, "pgxpool_waiting_acquires to show the waiting caller", func() (bool, string) {
		v, ok := gauge(t, reg, "pgxpool_waiting_acquires")
		return v == 1, fmt.Sprintf("%v (present %v)", v, ok)
	})
	for name, want := range map[string]float64{"pgxpool_acquired_connections": 1, "pgxpool_max_connections": 1, "pgxpool_idle_connections": 0} {
		if v, ok := gauge(t, reg, name); !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	// The gauge rises as the acquire begins, before the pool has it wait: released before
	// then, the connection would be idle when the caller asks and its wait would not count.
	testwait.For(t, 5*time.Second, "the waiting caller to be parked inside the pool", func() (bool, string) {
		return waitsInPool("TestPoolMetricsAndSpans")
	})
	held.Release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if v, _ := gauge(t, reg, "pgxpool_waiting_acquires"); v != 0 {
		t.Errorf("pgxpool_waiting_acquires = %v after the wait, want 0", v)
	}
	if n, _ := gauge(t, reg, "pgxpool_acquire_duration_seconds"); n < 2 {
		t.Errorf("%v acquires timed, want at least 2", n)
	}
	if n, _ := gauge(t, reg, "pgxpool_empty_acquires_total"); n < 1 {
		t.Errorf("pgxpool_empty_acquires_total = %v, want the acquire that waited", n)
	}

	// Database spans, in a recorded trace only.
	ctx, parent := tp.Tracer("test").Start(ctx, "request")
	var one int
	if err := pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
	parent.End()
	var db sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() {
			db = s
		}
	}
	if db == nil {
		t.Fatalf("no database span under the request's span: %d spans", len(spans.Ended()))
	}
	attrs := map[string]string{}
	for _, a := range db.Attributes() {
		attrs[string(a.Key)] = a.Value.String()
	}
	if attrs["db.query.text"] != "SELECT 1" || attrs["db.system.name"] != "postgresql" || attrs["db.namespace"] == "" {
		t.Errorf("database span %q attributes %v", db.Name(), attrs)
	}
}

// waitsInPool reports whether a goroutine of the test named test waits for a pool's
// connection (on the pool's acquire semaphore), and else the test's goroutines' states.
func waitsInPool(test string) (bool, string) {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var seen []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, test) {
			continue
		}
		if strings.Contains(g, "semaphore.(*Weighted).Acquire") && strings.Contains(g, "puddle") {
			return true, ""
		}
		header, rest, _ := strings.Cut(g, "\n")
		top, _, _ := strings.Cut(rest, "\n")
		seen = append(seen, header+" in "+top)
	}
	return false, fmt.Sprintf("the test's goroutines: %s", strings.Join(seen, "; "))
}
