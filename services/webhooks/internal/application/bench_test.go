package application_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/services/webhooks/internal/application"
)

// arrivals is a fast receiver that records when each delivery (event and subscription
// path) first arrived.
type arrivals struct {
	mu      sync.Mutex
	at      map[string]time.Time
	arrived chan struct{}
}

// newArrivals serves a fast receiver on 127.0.0.1.
func newArrivals(b *testing.B) (*arrivals, string) {
	a := &arrivals{at: map[string]time.Time{}, arrived: make(chan struct{}, 1)}
	srv := httptest.NewServer(a)
	b.Cleanup(srv.Close)
	return a, srv.URL
}

func (a *arrivals) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	body, _ := io.ReadAll(r.Body)
	var b struct {
		EventID string `json:"eventId"`
	}
	_ = json.Unmarshal(body, &b)
	a.mu.Lock()
	if _, seen := a.at[b.EventID+r.URL.Path]; !seen {
		a.at[b.EventID+r.URL.Path] = now
	}
	a.mu.Unlock()
	select {
	case a.arrived <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *arrivals) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.at)
}

// wait blocks until n deliveries have arrived.
func (a *arrivals) wait(b *testing.B, n int, timeout time.Duration) {
	deadline := time.After(timeout)
	for a.count() < n {
		select {
		case <-a.arrived:
		case <-deadline:
			b.Fatalf("%d of %d deliveries arrived within %s", a.count(), n, timeout)
		}
	}
}

// BenchmarkDeliveryThroughput measures signed deliveries per second to a fast local
// receiver, from events on the broker to requests answered: the intake, the claims, the
// signing and the HTTP attempts, and the recording of every attempt. One operation is
// one delivery. With subscriptions=10 every event fans out to ten subscriptions.
func BenchmarkDeliveryThroughput(b *testing.B) {
	for _, subs := range []int{1, 10} {
		b.Run(fmt.Sprintf("subscriptions=%d", subs), func(b *testing.B) {
			s := start(b, nil, application.Options{})
			c := client(b, s, "bench")
			nEvents := (b.N + subs - 1) / subs
			rc, url := newArrivals(b)
			for i := 0; i < subs; i++ {
				r := c.Do("POST", "/v0/webhook_subscriptions", map[string]any{"url": fmt.Sprintf("%s/%d", url, i), "events": nil})
				if r.Status != 201 {
					b.Fatalf("subscribe: %s", r)
				}
			}
			evts := formEvents(b, "bench", "form", nEvents)
			b.ResetTimer()
			start := time.Now()
			rc.deliver(b, s.Broker, evts, subs)
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(nEvents*subs)/elapsed.Seconds(), "deliveries/s")
		})
	}
}

// formEvents makes n form.submitted events of tenantID, about forms prefix_0 to
// prefix_{n-1}.
func formEvents(b *testing.B, tenantID, prefix string, n int) []events.Envelope {
	evts := make([]events.Envelope, n)
	for i := range evts {
		evts[i] = event(b, tenantID, events.TypeFormSubmitted, fmt.Sprintf("%s_%d", prefix, i))
	}
	return evts
}

// deliver publishes evts and waits until fanout deliveries of each have arrived.
func (a *arrivals) deliver(b *testing.B, broker *kafkatest.Broker, evts []events.Envelope, fanout int) {
	before := a.count()
	publish(b, broker, evts...)
	a.wait(b, before+len(evts)*fanout, 5*time.Minute)
}

// producer is a stand-in for a producing service (pages): its own database with the
// outbox, and the platform's outbox relay publishing to the broker.
func producer(b *testing.B, broker *kafkatest.Broker) *pgxpool.Pool {
	ctx, cancel := context.WithCancel(context.Background())
	wake := outbox.NewWakeup()
	pool, err := postgres.ConnectWith(ctx, pgtest.NewDatabase(b), func(c *pgxpool.Config) { c.ConnConfig.Tracer = wake })
	if err != nil {
		b.Fatal(err)
	}
	if err := postgres.Migrate(ctx, pool, nil, outbox.Migrations); err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := broker.Config()
	w := cfg.Writer()
	relay := &outbox.Relay{Pool: pool, Publisher: w, Log: log, Wakeup: wake, CreateTopics: cfg.EnsureTopics}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); wake.Run(ctx, pool, log) }()
	go func() { defer wg.Done(); _ = relay.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = w.Close()
		pool.Close()
	})
	return pool
}

// BenchmarkWriteToReceiverLatency measures the time from a producer's write (the
// commit of a row's event into its outbox, as a create in the pages service does) to the
// signed delivery arriving at the receiver: outbox relay, broker, intake, claim, attempt.
// Events are written at a steady 200 per second; one operation is one event. Reported:
// p50, p99 and max in milliseconds.
func BenchmarkWriteToReceiverLatency(b *testing.B) {
	s := start(b, nil, application.Options{})
	c := client(b, s, "bench")
	rc, url := newArrivals(b)
	if r := c.Do("POST", "/v0/webhook_subscriptions", map[string]any{"url": url, "events": nil}); r.Status != 201 {
		b.Fatalf("subscribe: %s", r)
	}
	pool := producer(b, s.Broker)
	ctx := context.Background()
	write := func(e events.Envelope) {
		batch := &pgx.Batch{}
		if err := (outbox.Writer{}).Queue(ctx, batch, events.TopicPages, e); err != nil {
			b.Fatal(err)
		}
		if err := pool.SendBatch(ctx, batch).Close(); err != nil {
			b.Fatal(err)
		}
	}
	// Warm up: the consumer group joins and connections open before measuring.
	warm := event(b, "bench", events.TypeFormSubmitted, "warm-up")
	write(warm)
	rc.wait(b, 1, time.Minute)

	written := make(map[string]time.Time, b.N)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		<-tick.C
		e := event(b, "bench", events.TypePageVersionCreated, fmt.Sprintf("audience_%d", i%50))
		written[e.ID] = time.Now()
		write(e)
	}
	rc.wait(b, b.N+1, 2*time.Minute)
	b.StopTimer()
	lat := make([]float64, 0, b.N)
	rc.mu.Lock()
	for id, at := range rc.at {
		if w, ok := written[strings.TrimSuffix(id, "/")]; ok {
			lat = append(lat, float64(at.Sub(w).Microseconds())/1000)
		}
	}
	rc.mu.Unlock()
	slices.Sort(lat)
	pct := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(lat[len(lat)-1], "max-ms")
}
