package app

import (
	"context"
	"log/slog"
	"time"
)

// Janitor settings.
const (
	purgeBatch   = 100
	sweepBatch   = 100
	sweepRetry   = time.Minute
	maxBatchRuns = 50 // per tick, so one tick cannot run forever
)

// PurgeOnce deletes trashed assets older than retention (in batches until none is due)
// and removes their bytes. It returns how many assets it deleted.
func (s *Service) PurgeOnce(ctx context.Context, retention time.Duration) (int, error) {
	total := 0
	for range maxBatchRuns {
		now := s.Clock.Now()
		n, keys, err := s.Repo.PurgeDue(ctx, now.Add(-retention), now, purgeBatch)
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
		n, err := s.Repo.Sweep(ctx, s.Clock.Now(), sweepBatch, sweepRetry, s.Storage.Delete)
		if err != nil {
			return total, err
		}
		total += n
		if n < sweepBatch {
			break
		}
	}
	return total, nil
}

// RunJanitor purges and sweeps every interval until ctx ends. Several replicas may run it
// at once: both steps take their rows with SKIP LOCKED.
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
