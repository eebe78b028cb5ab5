package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/customerapi/platform/services/pages/internal/domain"
)

// sessionBatch is how many sessions one transaction computes.
const sessionBatch = 100

// SessionWorker computes the derived metrics of pending sessions. Several replicas may
// run it: each claims rows with SKIP LOCKED, so a session is computed by one of them,
// once.
type SessionWorker struct {
	store    domain.SessionQueue
	metrics  domain.SessionMetrics
	idle     time.Duration
	log      *slog.Logger
	counters *SessionCounters
	wake     chan struct{}
}

// NewSessionWorker returns a worker that computes sessions by metrics, looking for
// pending ones every idle when nothing wakes it; counters may be nil.
func NewSessionWorker(store domain.SessionQueue, metrics domain.SessionMetrics, idle time.Duration, log *slog.Logger,
	counters *SessionCounters) *SessionWorker {
	return &SessionWorker{store: store, metrics: metrics, idle: idle, log: log, counters: counters,
		wake: make(chan struct{}, 1)}
}

// Poke wakes the worker; it never blocks.
func (w *SessionWorker) Poke() {
	select {
	case w.wake <- struct{}{}:
	default: // a wake-up is already pending; it covers this one
	}
}

// Run computes sessions until ctx ends: right away, when poked, and every idle period
// (sessions recorded by another replica, or left pending by a crash). A failed run is
// retried with backoff.
func (w *SessionWorker) Run(ctx context.Context) error {
	t := time.NewTicker(w.idle)
	defer t.Stop()
	backoff := 200 * time.Millisecond
	for {
		done, err := w.store.ComputePending(ctx, w.metrics, sessionBatch, time.Now().UTC())
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
		case done.Total() == sessionBatch:
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
