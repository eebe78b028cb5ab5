package keys

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Usage remembers when each key was last used on this replica and writes it to the
// database every interval in one statement, so that lastUsedAt costs no database write
// per request.
type Usage struct {
	store *Store
	log   *slog.Logger
	mu    sync.Mutex
	seen  map[string]time.Time
}

// NewUsage returns a Usage writing to store.
func NewUsage(store *Store, log *slog.Logger) *Usage {
	return &Usage{store: store, log: log, seen: map[string]time.Time{}}
}

// Seen records that the key with ID id was used at t.
func (u *Usage) Seen(id string, t time.Time) {
	u.mu.Lock()
	if t.After(u.seen[id]) {
		u.seen[id] = t
	}
	u.mu.Unlock()
}

// Flush writes what was seen since the last flush; on failure it is kept for the next.
func (u *Usage) Flush(ctx context.Context) error {
	u.mu.Lock()
	batch := u.seen
	u.seen = map[string]time.Time{}
	u.mu.Unlock()
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
