package sessions

import (
	"context"
	"log/slog"
	"time"

	"github.com/customerapi/platform/services/pages/internal/domain/session"
)

// batch is how many sessions one transaction computes.
const batch = 100

// Worker computes the derived metrics of pending sessions. Several replicas may
// run it: each claims rows with SKIP LOCKED, so a session is computed by one of them,
// once.
type Worker struct {
	store    session.Queue
	metrics  session.Metrics
	idle     time.Duration
	log      *slog.Logger
	counters *Metrics
	wake     chan struct{}
}

// NewWorker returns a worker that computes sessions by metrics, looking for
// pending ones every idle when nothing wakes it; counters may be nil.
func NewWorker(store session.Queue, metrics session.Metrics, idle time.Duration, log *slog.Logger,
	counters *Metrics) *Worker {
	return &Worker{store: store, metrics: metrics, idle: idle, log: log, counters: counters,
		wake: make(chan struct{}, 1)}
}

// Poke wakes the worker; it never blocks.
func (w *Worker) Poke() {
	select {
	case w.wake <- struct{}{}:
	default: // a wake-up is already pending; it covers this one
	}
}

// Run computes sessions until ctx ends: right away, when poked, and every idle period
// (sessions recorded by another replica, or left pending by a crash). A failed run is
// retried with backoff.
func (w *Worker) Run(ctx context.Context) error {
	t := time.NewTicker(w.idle)
	defer t.Stop()
	backoff := 200 * time.Millisecond
	for {
		done, err := w.store.ComputePending(ctx, w.metrics, batch, time.Now().UTC())
		w.counters.computed(done)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			w.counters.failed()
			w.log.Warn("computing session metrics failed; retrying", slog.Any("error", err), slog.Duration("backoff", backoff))
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 10*time.Second)
			continue
		case done.Total() == batch:
			continue // more may be waiting
		}
		backoff = 200 * time.Millisecond
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake:
		case <-t.C:
		}
	}
}
