package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/customerapi/platform/libs/worker"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

// Worker processes queued versions. Its whole state is in the database: a version is
// claimed with a lease (FOR UPDATE SKIP LOCKED), processed, and finished in one
// transaction fenced by the claim, so a worker that dies mid-processing leaves a version
// that another worker (or the restarted one) claims again once the lease expires, and
// finishing happens exactly once. Several replicas run side by side safely.
type Worker struct {
	Store domain.Queue
	// Wakeups wake the worker on new versions, and now and then without one (expired
	// leases are found this way).
	Wakeups domain.Wakeups
	// Goroutines is how many versions the replica processes at once (at least 1).
	Goroutines int
	Log        *slog.Logger
	// Lease is how long a claim is held before another worker may take the version over.
	Lease time.Duration
	// Process runs between claim and finish (the place of the page agent's generation;
	// nil does nothing). Tests use it to simulate a crash.
	Process func(ctx context.Context, c domain.Claim) error
	// Metrics counts outcomes (nil: none).
	Metrics *Metrics
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (w *Worker) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// Run processes versions until ctx ends, woken by Wakeups.
//
// One listener serves the replica and each wake-up wakes one idle
// goroutine, which claims until it finds nothing; a goroutine that finds a second
// version in a row wakes another, so a backlog is shared. (A listener per goroutine
// woke them all for every version: all but one claimed for nothing.)
func (w *Worker) Run(ctx context.Context) error {
	wake := worker.NewWaker()
	var wg sync.WaitGroup
	for range max(w.Goroutines, 1) {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-wake.C():
					w.drain(ctx, wake)
				}
			}
		})
	}
	w.Wakeups.Listen(ctx, wake.Wake)
	wg.Wait()
	return nil
}

// drain processes versions until none is ready, waking another goroutine from the
// second version on.
func (w *Worker) drain(ctx context.Context, wake worker.Waker) {
	for n := 0; ctx.Err() == nil; n++ {
		done, err := w.Step(ctx)
		if err != nil {
			w.Log.Warn("version processing failed; retrying after the lease", slog.Any("error", err))
			return
		}
		if !done {
			return
		}
		if n > 0 {
			wake.Wake()
		}
	}
}

// Step claims and processes one version; it reports false when none was ready.
//
// The claim and the finish run on contexts that shutdown does not cancel: a claim
// cancelled in flight may already hold its lease on the server, and a claimed version
// left unfinished waits for the lease to run out; both take milliseconds.
func (w *Worker) Step(ctx context.Context) (bool, error) {
	cctx, cancelClaim := context.WithTimeout(context.WithoutCancel(ctx), statementTimeout)
	c, err := w.Store.Claim(cctx, timestampNow(w.now()), w.Lease)
	cancelClaim()
	if errors.Is(err, domain.ErrNothingToProcess) {
		return false, nil
	}
	if errors.Is(err, domain.ErrGaveUp) {
		w.Metrics.outcome("gave_up")
		w.Log.Warn("version cancelled after failing too often", slog.Int("attempts", domain.MaxAttempts))
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if w.Process != nil {
		if err := w.Process(ctx, c); err != nil {
			w.Metrics.outcome("failed")
			return true, fmt.Errorf("process version %s: %w", c.VersionID, err)
		}
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statementTimeout)
	defer cancel()
	v, err := w.Store.Finish(fctx, c, timestampNow(w.now()))
	if errors.Is(err, domain.ErrLeaseLost) {
		w.Metrics.outcome("taken_over")
		w.Log.Warn("version was taken over by another worker", slog.String("versionId", c.VersionID))
		return true, nil
	}
	if err != nil {
		w.Metrics.outcome("failed")
		return true, fmt.Errorf("finish version %s: %w", c.VersionID, err)
	}
	w.Metrics.outcome(v.Status)
	w.Metrics.queued(v.QueueDurationMs)
	w.Log.Debug("version processed", slog.String("versionId", v.ID), slog.String("status", v.Status))
	return true, nil
}

// statementTimeout bounds the claim and the finish of a version.
const statementTimeout = 10 * time.Second

func timestampNow(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }
