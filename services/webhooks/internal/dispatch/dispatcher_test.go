package dispatch

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/services/webhooks/internal/adapters"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// shutdownQueue hands out one claim that is still in flight when the engine is told to
// stop, and records what the engine completes. Like pgx, a claim whose context is
// cancelled by then fails, although the server may already have leased its rows: those
// leases count as handed out either way.
type shutdownQueue struct {
	entered  chan<- struct{} // closed when the first claim begins
	stopping <-chan struct{} // closed once the engine's context is cancelled
	jobs     []adapters.Job

	mu        sync.Mutex
	claimed   bool
	completed map[string]domain.Status
}

func (q *shutdownQueue) Claim(ctx context.Context, limit, _ int, _ []string, _ time.Duration) ([]adapters.Job, error) {
	q.mu.Lock()
	first := !q.claimed
	q.claimed = true
	q.mu.Unlock()
	if !first {
		return nil, nil
	}
	close(q.entered)
	<-q.stopping
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return q.jobs[:min(limit, len(q.jobs))], nil
}

func (q *shutdownQueue) NextDue(context.Context, []string) (time.Duration, bool, error) {
	return 0, false, nil
}

func (q *shutdownQueue) Complete(_ context.Context, results []adapters.Result, _ time.Duration) ([]adapters.Disabled, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range results {
		q.completed[r.DeliveryID] = r.Status
	}
	return nil, nil
}

// A claim in flight when the engine stops is not lost: every delivery it leased is
// completed or released before Run returns, instead of waiting out its lease.
func TestClaimInFlightAtShutdownIsReleased(t *testing.T) {
	entered, stopping := make(chan struct{}), make(chan struct{})
	var jobs []adapters.Job
	for _, id := range []string{"dlv_1", "dlv_2", "dlv_3", "dlv_4"} {
		// An inactive subscription's job completes without a request.
		jobs = append(jobs, adapters.Job{TenantID: "acme", DeliveryID: id, SubscriptionID: "whsub_1", OrderingKey: id})
	}
	jobs[3].Active = true
	jobs[3].URL = "http://127.0.0.1:1/" // never reached: the engine is stopping before it starts
	q := &shutdownQueue{entered: entered, stopping: stopping, jobs: jobs, completed: map[string]domain.Status{}}
	// The LISTEN connection never comes up; the engine then relies on its own wake-ups.
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := New(Config{Workers: 4, PerSubscription: 1, Lease: time.Minute, ClaimBatch: 10, ShutdownGrace: time.Second,
		Idle: time.Minute}, q, newSender(time.Second), pool, log, NewMetrics(prometheus.NewRegistry(), nil, log))

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
