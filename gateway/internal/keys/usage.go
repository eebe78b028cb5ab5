package keys

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Usage remembers when each key was last used on this replica and writes it to the
// database every interval in one statement, so that lastUsedAt costs no database write
// per request, and no lock either: Seen is a map load and an atomic store.
type Usage struct {
	store *Store
	log   *slog.Logger
	seen  sync.Map // key ID -> *atomic.Int64, unix nanoseconds (0: written already)
}

// NewUsage returns a Usage writing to store.
func NewUsage(store *Store, log *slog.Logger) *Usage { return &Usage{store: store, log: log} }

// Seen records that the key with ID id was used at t.
func (u *Usage) Seen(id string, t time.Time) {
	v, ok := u.seen.Load(id)
	if !ok {
		v, _ = u.seen.LoadOrStore(id, new(atomic.Int64))
	}
	last, ns := v.(*atomic.Int64), t.UnixNano()
	for {
		old := last.Load()
		if ns <= old || last.CompareAndSwap(old, ns) {
			return
		}
	}
}

// Flush writes what was seen since the last flush; on failure it is kept for the next.
func (u *Usage) Flush(ctx context.Context) error {
	batch := map[string]time.Time{}
	u.seen.Range(func(k, v any) bool {
		if ns := v.(*atomic.Int64).Swap(0); ns != 0 {
			batch[k.(string)] = time.Unix(0, ns)
		} else {
			u.seen.Delete(k) // not used since the last flush: forget it (a revoked key's entry goes)
		}
		return true
	})
	if err := u.store.Touch(ctx, batch); err != nil {
		for id, t := range batch {
			u.Seen(id, t)
		}
		return err
	}
	return nil
}

// Run flushes every interval until ctx ends, and once more then.
func (u *Usage) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = 30 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = u.Flush(fctx)
			cancel()
			return
		case <-t.C:
			if err := u.Flush(ctx); err != nil && ctx.Err() == nil {
				u.log.Warn("keys: recording when keys were last used failed; kept for the next try", slog.Any("error", err))
			}
		}
	}
}
