// Package ids makes and checks TypeIDs: a prefix, an underscore and 26 lowercase base32
// characters encoding a UUIDv7, so IDs sort by creation time.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"sync"
	"time"

	"go.jetify.com/typeid"
	"go.jetify.com/typeid/base32"
)

// SuffixLen is the length of a TypeID suffix.
const SuffixLen = 26

// generator makes UUIDv7 values that strictly increase within the process (RFC 9562
// §6.2, method 2: within one millisecond the 74 random bits are incremented), so IDs
// made one after another always sort in creation order.
type generator struct {
	mu   sync.Mutex
	ms   uint64
	hi   uint16 // 12 bits of rand_a
	lo   uint64 // 62 bits of rand_b
	now  func() time.Time
	rand func([]byte)
}

var gen = &generator{now: time.Now, rand: func(b []byte) { _, _ = rand.Read(b) }}

func (g *generator) next() [16]byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	ms := uint64(g.now().UnixMilli())
	if ms > g.ms {
		var b [10]byte
		g.rand(b[:])
		g.ms = ms
		g.hi = binary.BigEndian.Uint16(b[0:2]) & 0x0fff
		// Start in the lower half so many increments fit before rand_b overflows.
		g.lo = binary.BigEndian.Uint64(b[2:10]) & (1<<61 - 1)
	} else {
		// Same (or an earlier, if the clock stepped back) millisecond: count up.
		g.lo++
		if g.lo >= 1<<62 {
			g.lo = 0
			g.hi++
			if g.hi > 0x0fff {
				g.hi = 0
				g.ms++
			}
		}
	}
	var u [16]byte
	binary.BigEndian.PutUint64(u[0:8], g.ms<<16|0x7000|uint64(g.hi))
	binary.BigEndian.PutUint64(u[8:16], 0x8000000000000000|g.lo)
	return u
}

// New returns a new TypeID with the given prefix (lowercase letters and underscores, as
// TypeID requires; callers pass constants checked by tests).
func New(prefix string) string {
	return prefix + "_" + base32.Encode(gen.next())
}

// Valid reports whether s is a well-formed TypeID with the given prefix.
func Valid(prefix, s string) bool {
	if !strings.HasPrefix(s, prefix+"_") || len(s) != len(prefix)+1+SuffixLen {
		return false
	}
	id, err := typeid.FromString(s)
	return err == nil && id.Prefix() == prefix
}
