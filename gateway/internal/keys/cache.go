package keys

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/libs/postgres"
)

// Cache holds every active key in memory, so verifying a key never costs a database
// round trip. It reloads on a notification from the database (immediately, on every
// replica) and at least every RefreshEvery as a backstop, which bounds how long a revoked
// key keeps working.
type Cache struct {
	store  *Store
	hasher *Hasher
	log    *slog.Logger
	every  time.Duration
	byHash atomic.Pointer[map[[32]byte]*Key]
	// mu orders writers of byHash: a Load holds it from before it reads the database
	// until it stores what it read, so a Put or Remove that happens meanwhile (the key
	// committed after the read began) is applied to the new map, never overwritten by an
	// older view. Lookups take no lock.
	mu      sync.Mutex
	loaded  atomic.Int64 // unix nanos of the last successful load
	reloads prometheus.Counter
	size    prometheus.Gauge
	memo    hashMemo
}

// NewCache returns an empty cache; call Load before serving, then Run.
func NewCache(store *Store, hasher *Hasher, every time.Duration, log *slog.Logger, reg prometheus.Registerer) *Cache {
	c := &Cache{store: store, hasher: hasher, log: log, every: every,
		reloads: prometheus.NewCounter(prometheus.CounterOpts{Name: "gateway_key_cache_reloads_total", Help: "Reloads of the API key cache."}),
		size:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "gateway_key_cache_keys", Help: "Active API keys in the cache."}),
	}
	if reg != nil {
		age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gateway_key_cache_age_seconds",
			Help: "Seconds since the API key cache last loaded from the database (readiness fails past KEY_CACHE_MAX_STALENESS)."},
			func() float64 { return c.Age().Seconds() })
		reg.MustRegister(c.reloads, c.size, age)
	}
	empty := map[[32]byte]*Key{}
	c.byHash.Store(&empty)
	return c
}

// Lookup returns the active key for a presented plaintext key, or nil.
func (c *Cache) Lookup(presented string) *Key {
	if !WellFormed(presented) {
		return nil
	}
	return c.find(c.memo.hash(presented, c.hasher))
}

// LookupBytes is Lookup of a key held in a request's buffer, without copying it.
func (c *Cache) LookupBytes(presented []byte) *Key {
	if !wellFormed(presented) {
		return nil
	}
	return c.find(c.memo.hashBytes(presented, c.hasher))
}

func (c *Cache) find(h [32]byte) *Key {
	k := (*c.byHash.Load())[h]
	if k == nil {
		return nil
	}
	// The map lookup found it by hash; compare again in constant time as a matter of
	// principle, so no timing depends on how much of the hash matched.
	if subtle.ConstantTimeCompare(k.Hash[:], h[:]) != 1 {
		return nil
	}
	return k
}

// Put adds a key at once (used by the replica that created it).
func (c *Cache) Put(k Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.byHash.Load()
	next := make(map[[32]byte]*Key, len(old)+1)
	for h, v := range old {
		next[h] = v
	}
	next[k.Hash] = &k
	c.byHash.Store(&next)
}

// Remove drops a key at once (used by the replica that revoked it).
func (c *Cache) Remove(hash [32]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.byHash.Load()
	next := make(map[[32]byte]*Key, len(old))
	for h, v := range old {
		if h != hash {
			next[h] = v
		}
	}
	c.byHash.Store(&next)
}

// Load replaces the cache with the active keys of the database.
func (c *Cache) Load(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ks, err := c.store.Active(ctx)
	if err != nil {
		return err
	}
	next := make(map[[32]byte]*Key, len(ks))
	for i := range ks {
		next[ks[i].Hash] = &ks[i]
	}
	c.byHash.Store(&next)
	c.loaded.Store(time.Now().UnixNano())
	c.reloads.Inc()
	c.size.Set(float64(len(next)))
	return nil
}

// Age is the time since the last successful load.
func (c *Cache) Age() time.Duration {
	return time.Since(time.Unix(0, c.loaded.Load()))
}

// ErrStale says the cache may no longer be trusted to decide which keys are valid.
var ErrStale = errors.New("keys: the key cache is stale")

// Fresh returns nil while the cache can serve: it has loaded, and not longer than maxAge
// ago. Past that, a key revoked through a replica that still reaches the database may
// still be accepted here, so the caller should stop serving.
func (c *Cache) Fresh(maxAge time.Duration) error {
	if c.loaded.Load() == 0 {
		return fmt.Errorf("%w: never loaded", ErrStale)
	}
	if age := c.Age(); age > maxAge {
		return fmt.Errorf("%w: last loaded %s ago (limit %s)", ErrStale, age.Round(time.Second), maxAge)
	}
	return nil
}

// Run keeps the cache fresh until ctx ends: it listens for the api_keys notification
// and reloads on each, and reloads every RefreshEvery regardless.
func (c *Cache) Run(ctx context.Context) {
	postgres.ListenLoop(ctx, c.store.Pool(), "api_keys", c.every, c.log, func(ctx context.Context) (time.Duration, error) {
		if err := c.Load(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("key cache reload failed; serving the previous keys", slog.Any("error", err))
		}
		return c.every, nil
	})
}
