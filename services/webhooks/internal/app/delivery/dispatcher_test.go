package delivery

import (
	"context"
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

	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/services/webhooks/internal/adapters/metrics"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// A claim in flight when the engine stops is not lost: every delivery it leased is
// completed or released before Run returns, instead of waiting out its lease.
func TestClaimInFlightAtShutdownIsReleased(t *testing.T) {
	entered, stopping := make(chan struct{}), make(chan struct{})
	var jobs []domain.Job
	for _, id := range []string{"dlv_1", "dlv_2", "dlv_3", "dlv_4"} {
		// An inactive subscription's job completes without a request.
		jobs = append(jobs, domain.Job{TenantID: "acme", DeliveryID: id, SubscriptionID: "whsub_1", OrderingKey: id})
	}
	jobs[3].Active = true
	jobs[3].URL = "http://127.0.0.1:1/" // refused at once if reached: the engine is stopping
	// The first claim is still in flight when the engine is told to stop. Like pgx, a
	// claim whose context is cancelled by then fails, although the server may already
	// have leased its rows: those leases count as handed out either way.
	var once sync.Once
	q := &memQueue{hold: func(ctx context.Context) error {
		first := false
		once.Do(func() { first = true })
		if first {
			close(entered)
			<-stopping
		}
		return ctx.Err()
	}}
	q.add(jobs...)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// PerSubscription 2: one claim takes all four of whsub_1 (laneDepth × 2).
	d := New(Config{Workers: 4, PerSubscription: 2, Lease: time.Minute, ClaimBatch: 10, ShutdownGrace: time.Second,
		Idle: time.Minute}, q, newSender(time.Second), q, log, metrics.New(prometheus.NewRegistry(), nil, log))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	<-entered // the engine is inside its first claim
	cancel()
	close(stopping)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, j := range jobs {
		if _, ok := q.completed[j.DeliveryID]; !ok {
			t.Errorf("%s was claimed but never completed or released (completed: %v)", j.DeliveryID, q.completed)
		}
	}
}

// gate is a receiver on 127.0.0.1 that holds every request until the test lets it go.
type gate struct {
	*httptest.Server
	arrived chan held
}

// held is a request the gate holds: its tenant (the URL's path) and what lets it go.
type held struct {
	tenant string
	done   chan struct{}
}

func newGate(t *testing.T) *gate {
	g := &gate{arrived: make(chan held, 100)}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server notices when the engine gives up
		h := held{tenant: strings.TrimPrefix(r.URL.Path, "/"), done: make(chan struct{})}
		g.arrived <- h
		select {
		case <-h.done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(g.Close)
	return g
}

// next waits for the next request.
func (g *gate) next(t *testing.T) held {
	t.Helper()
	select {
	case h := <-g.arrived:
		return h
	case <-time.After(10 * time.Second):
		t.Fatal("no attempt arrived within 10 s")
		return held{}
	}
}

// jobsOf makes n jobs of a tenant, spread over its subscriptions, each with its own
// subject, all to the gate.
func jobsOf(t *testing.T, g *gate, tenantID string, subs, n int) []domain.Job {
	var jobs []domain.Job
	for i := range n {
		j := job(t, g.URL+"/"+tenantID)
		j.TenantID, j.SubscriptionID = tenantID, fmt.Sprintf("whsub_%s_%d", tenantID, i%subs)
		j.DeliveryID, j.OrderingKey = fmt.Sprintf("dlv_%s_%d", tenantID, i), fmt.Sprintf("form_%d", i)
		jobs = append(jobs, j)
	}
	return jobs
}

// queueOf returns a queue holding jobs, all due.
func queueOf(jobs ...domain.Job) *memQueue {
	q := &memQueue{}
	q.add(jobs...)
	return q
}

// runEngine runs a dispatcher on q until the test ends.
// runUntilCleanup runs d until the test ends, and checks that it then stops cleanly.
func runUntilCleanup(t *testing.T, d *Dispatcher) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("the dispatcher stopped with %v, want a clean stop", err)
		}
	})
}

func runEngine(t *testing.T, cfg Config, q *memQueue) *Dispatcher {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Lease, cfg.ClaimBatch, cfg.ShutdownGrace, cfg.Idle = time.Minute, 100, 100*time.Millisecond, time.Minute
	d := New(cfg, q, newSender(10*time.Second), q, log, metrics.New(prometheus.NewRegistry(), nil, log))
	runUntilCleanup(t, d)
	return d
}

// The engine's side of the fair rule. A tenant alone gets its whole share of the workers
// and no more, although it holds more deliveries over several subscriptions and workers
// are free; and when workers are scarce they go to the tenants in turn, one attempt each,
// however many subscriptions a tenant has.
func TestTenantShareOfWorkersAndTurns(t *testing.T) {
	t.Run("share", func(t *testing.T) {
		g := newGate(t)
		d := runEngine(t, Config{Workers: 4, TenantConcurrency: 2, PerSubscription: 8},
			queueOf(jobsOf(t, g, "acme", 3, 6)...))
		// Each arrival after the first two starts when an attempt finishes, in the same
		// locked step: the count read after it is the share in use.
		inFlight := []held{g.next(t), g.next(t)}
		for arrived := 2; ; arrived++ {
			d.mu.Lock()
			n := d.inFlight
			d.mu.Unlock()
			if n != 2 {
				t.Fatalf("a tenant alone with %d deliveries left had %d attempts in flight on 4 workers; its share is 2: "+
					"it must get all of its share and never more", 6-arrived+2, n)
			}
			close(inFlight[0].done)
			if arrived == 6 {
				close(inFlight[1].done)
				break
			}
			inFlight = append(inFlight[1:], g.next(t))
		}
	})
	t.Run("turns", func(t *testing.T) {
		g := newGate(t)
		jobs := jobsOf(t, g, "acme", 2, 6) // due first, over two subscriptions
		jobs = append(jobs, jobsOf(t, g, "globex", 1, 3)...)
		jobs = append(jobs, jobsOf(t, g, "initech", 1, 3)...)
		runEngine(t, Config{Workers: 3, PerSubscription: 8}, queueOf(jobs...))
		// The first three go out at once, one of each tenant; then each worker set free
		// goes to the next tenant's turn.
		inFlight := []held{g.next(t), g.next(t), g.next(t)}
		first := []string{inFlight[0].tenant, inFlight[1].tenant, inFlight[2].tenant}
		if slices.Sort(first); fmt.Sprint(first) != "[acme globex initech]" {
			t.Fatalf("the first three attempts on three workers went to %v: each of the three tenants must get one", first)
		}
		var turns []string
		for range 9 {
			close(inFlight[0].done)
			h := g.next(t)
			inFlight = append(inFlight[1:], h)
			turns = append(turns, h.tenant)
		}
		for _, h := range inFlight {
			close(h.done)
		}
		if want := "[acme globex initech acme globex initech acme acme acme]"; fmt.Sprint(turns) != want {
			t.Fatalf("workers set free one at a time went to %v; they must go to the tenants in turn, one attempt each: %s",
				turns, want)
		}
	})
}
