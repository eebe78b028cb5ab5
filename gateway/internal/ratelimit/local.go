package ratelimit

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

const shards = 64

// Local keeps each key's GCRA timestamp in memory. It is exact for one gateway replica.
type Local struct {
	seed   maphash.Seed
	shards [shards]shard
	now    func() time.Time
}

type shard struct {
	mu  sync.Mutex
	tat map[string]int64
}

// NewLocal returns an in-memory limiter.
func NewLocal() *Local {
	l := &Local{seed: maphash.MakeSeed(), now: time.Now}
	for i := range l.shards {
		l.shards[i].tat = map[string]int64{}
	}
	return l
}

// Allow implements Limiter.
func (l *Local) Allow(_ context.Context, key string, p Policy) Decision {
	s := &l.shards[maphash.String(l.seed, key)%shards]
	now := l.now().UnixNano()
	s.mu.Lock()
	next, d := gcra(s.tat[key], now, p)
	s.tat[key] = next
	s.mu.Unlock()
	return d
}

// Sync records a decision taken elsewhere (by Redis), so that if Redis becomes
// unreachable the local fallback continues from where the shared limit was.
func (l *Local) Sync(key string, resetAfter time.Duration) {
	s := &l.shards[maphash.String(l.seed, key)%shards]
	tat := l.now().Add(resetAfter).UnixNano()
	s.mu.Lock()
	s.tat[key] = tat
	s.mu.Unlock()
}

// Prune forgets keys whose allowance is full again (their timestamp is in the past),
// bounding memory to the keys active within one window.
func (l *Local) Prune() {
	now := l.now().UnixNano()
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		for k, tat := range s.tat {
			if tat <= now {
				delete(s.tat, k)
			}
		}
		s.mu.Unlock()
	}
}

// RunPruner prunes every interval until ctx ends.
func (l *Local) RunPruner(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.Prune()
		}
	}
}
