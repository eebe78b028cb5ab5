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
	// seen maps each *Key the cache handed out (a pointer: no allocation to look up) to
	// its last use; a reload's new *Key gets an entry of its own, and an entry unused
	// since the last flush is dropped.
	seen sync.Map // *Key -> *usage
}

// usage is one key's last use, in unix nanoseconds (0: written already).
type usage struct {
	id   string
	last atomic.Int64
}

// NewUsage returns a Usage writing to store.
func NewUsage(store *Store, log *slog.Logger) *Usage { return &Usage{store: store, log: log} }

// Seen records that the key k was used at t.
func (u *Usage) Seen(k *Key, t time.Time) {
	v, ok := u.seen.Load(k)
	if !ok {
		v, _ = u.seen.LoadOrStore(k, &usage{id: k.ID})
	}
	last, ns := &v.(*usage).last, t.UnixNano()
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
		e := v.(*usage)
		if ns := e.last.Swap(0); ns != 0 {
			if t := time.Unix(0, ns); t.After(batch[e.id]) {
				batch[e.id] = t
			}
		} else {
			u.seen.Delete(k) // not used since the last flush: forget it (a reloaded or revoked key's entry goes)
		}
		return true
	})
	if err := u.store.Touch(ctx, batch); err != nil {
		for id, t := range batch {
			u.seen.Store(&Key{ID: id}, retry(id, t)) // kept for the next flush
		}
		return err
	}
	return nil
}

// retry is an entry holding a use that a failed flush must write next time.
func retry(id string, t time.Time) *usage {
	e := &usage{id: id}
	e.last.Store(t.UnixNano())
	return e
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
