package sessions

import (
	"context"
	"log/slog"
	"time"

	"github.com/customerapi/platform/libs/worker"
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
	wake     worker.Waker
}

// NewWorker returns a worker that computes sessions by metrics, looking for
// pending ones every idle when nothing wakes it; counters may be nil.
func NewWorker(store session.Queue, metrics session.Metrics, idle time.Duration, log *slog.Logger,
	counters *Metrics) *Worker {
	return &Worker{store: store, metrics: metrics, idle: idle, log: log, counters: counters,
		wake: worker.NewWaker()}
}

// Poke wakes the worker; it never blocks.
func (w *Worker) Poke() { w.wake.Wake() }

// Run computes sessions until ctx ends: right away, when poked, and every idle period
// (sessions recorded by another replica, or left pending by a crash). A failed run is
// retried with backoff.
func (w *Worker) Run(ctx context.Context) error {
	t := time.NewTicker(w.idle)
	defer t.Stop()
	backoff := worker.Backoff{First: 200 * time.Millisecond, Max: 10 * time.Second}
	for {
		done, err := w.store.ComputePending(ctx, w.metrics, batch, time.Now().UTC())
		w.counters.computed(done)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			w.counters.failed()
			w.log.Warn("computing session metrics failed; retrying", slog.Any("error", err), slog.Duration("backoff", backoff.Peek()))
			if !backoff.Sleep(ctx) {
				return nil
			}
			continue
		case done.Total() == batch:
			continue // more may be waiting
		}
		backoff.Reset()
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake.C():
		case <-t.C:
		}
	}
}
