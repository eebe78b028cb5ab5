package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/customerapi/platform/services/assets/internal/domain"
)

// Janitor settings.
const (
	purgeBatch = 100
	sweepBatch = 100
	sweepRetry = time.Minute
	// sweepLease is how long a taken batch of cleanup records is the janitor's: its
	// removals are cut off at half of it, so another replica takes a record again only
	// when the one that took it died.
	sweepLease   = 10 * time.Minute
	maxBatchRuns = 50 // per tick, so one tick cannot run forever
)

// PurgeOnce deletes trashed assets older than retention (in batches until none is due)
// and removes their bytes. It returns how many assets it deleted.
func (s *Service) PurgeOnce(ctx context.Context, retention time.Duration) (int, error) {
	total := 0
	for range maxBatchRuns {
		now := s.Clock.Now()
		n, keys, err := s.Repo.PurgeDue(ctx, now.Add(-retention), purgeBatch, func(a *domain.Asset) (domain.Event, bool, error) {
			a.Delete(now)
			return domain.Announce(domain.EventDeleted, *a, domain.ReasonRetention), true, nil
		})
		if err != nil {
			return total, err
		}
		total += n
		s.release(ctx, keys...)
		if n < purgeBatch {
			break
		}
	}
	return total, nil
}

// SweepOnce removes objects whose cleanup is due: abandoned uploads, and deletions whose
// removal failed or was interrupted. It returns how many objects it removed.
func (s *Service) SweepOnce(ctx context.Context) (int, error) {
	total := 0
	for range maxBatchRuns {
		n, taken, err := s.sweepBatch(ctx)
		total += n
		if err != nil {
			return total, err
		}
		if taken < sweepBatch {
			break
		}
	}
	return total, nil
}

// sweepBatch takes a batch of due cleanup records, removes their objects with no
// transaction open (a slow object store must not hold back the oldest running
// transaction, which every outbox relay of the cluster waits behind), then drops the
// records of the objects removed and postpones the others. Removal is idempotent: a
// crash in between leaves the records taken, and they come due again when the lease ends.
func (s *Service) sweepBatch(ctx context.Context) (removed, taken int, err error) {
	now := s.Clock.Now()
	keys, err := s.Repo.TakeDue(ctx, now, sweepBatch, now.Add(sweepLease))
	if err != nil || len(keys) == 0 {
		return 0, 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, sweepLease/2)
	defer cancel()
	gone, failed := s.remove(rctx, slog.LevelDebug, "object removal failed; retried later", keys)
	if len(gone) > 0 {
		if err := s.Repo.Forget(ctx, gone); err != nil {
			return 0, len(keys), fmt.Errorf("sweep: %w", err)
		}
	}
	if len(failed) > 0 {
		if err := s.Repo.DueAt(ctx, failed, now.Add(sweepRetry)); err != nil {
			return len(gone), len(keys), fmt.Errorf("sweep: %w", err)
		}
	}
	return len(gone), len(keys), nil
}

// RunJanitor purges and sweeps every interval until ctx ends. Several replicas may run it
// at once: both steps take their rows with SKIP LOCKED, and the sweep a lease on them.
func (s *Service) RunJanitor(ctx context.Context, interval, retention time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := s.PurgeOnce(ctx, retention); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.Log.WarnContext(ctx, "purge of trashed assets failed", slog.Any("error", err))
		} else if n > 0 {
			s.Log.InfoContext(ctx, "purged trashed assets", slog.Int("assets", n))
		}
		if n, err := s.SweepOnce(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.Log.WarnContext(ctx, "object cleanup failed", slog.Any("error", err))
		} else if n > 0 {
			s.Log.InfoContext(ctx, "removed unclaimed objects", slog.Int("objects", n))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
