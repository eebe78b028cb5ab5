package keys

import (
	"hash/maphash"
	"sync"
)

// hashMemo remembers the keyed hashes of recently presented keys, so a busy key costs a
// map lookup instead of an HMAC per request. It holds hashes only (never decides
// validity: the cache does), and is bounded: a shard that fills up is emptied, so random
// keys sent by an attacker cannot grow it.
type hashMemo struct {
	once   sync.Once
	seed   maphash.Seed
	shards [memoShards]memoShard
}

const (
	memoShards   = 64
	memoPerShard = 256
)

type memoShard struct {
	mu sync.Mutex
	m  map[string][32]byte
}

func (m *hashMemo) hash(key string, h *Hasher) [32]byte {
	m.once.Do(func() { m.seed = maphash.MakeSeed() })
	s := &m.shards[maphash.String(m.seed, key)%memoShards]
	s.mu.Lock()
	sum, ok := s.m[key]
	s.mu.Unlock()
	if ok {
		return sum
	}
	return s.put(key, h)
}

// hashBytes is hash of a key held in a request's buffer: a hit copies nothing (the
// map lookup of string(key) does not allocate; maphash.Bytes and maphash.String agree).
func (m *hashMemo) hashBytes(key []byte, h *Hasher) [32]byte {
	m.once.Do(func() { m.seed = maphash.MakeSeed() })
	s := &m.shards[maphash.Bytes(m.seed, key)%memoShards]
	s.mu.Lock()
	sum, ok := s.m[string(key)]
	s.mu.Unlock()
	if ok {
		return sum
	}
	return s.put(string(key), h)
}

func (s *memoShard) put(key string, h *Hasher) [32]byte {
	sum := h.Hash(key)
	s.mu.Lock()
	if s.m == nil || len(s.m) >= memoPerShard {
		s.m = make(map[string][32]byte, memoPerShard)
	}
	s.m[key] = sum
	s.mu.Unlock()
	return sum
}
