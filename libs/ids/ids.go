// Package ids makes and checks TypeIDs: a prefix, an underscore and 26 lowercase base32
// characters encoding a UUIDv7, so IDs sort by creation time.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"time"

	"github.com/gofrs/uuid/v5"
	"go.jetify.com/typeid"
	"go.jetify.com/typeid/base32"
)

// SuffixLen is the length of a TypeID suffix.
const SuffixLen = 26

// New returns a new TypeID with the given prefix (lowercase letters and underscores, as
// TypeID requires; callers pass constants checked by tests).
func New(prefix string) string {
	u, err := uuid.NewV7()
	if err != nil {
		// uuid.NewV7 fails only when the system's randomness fails; fall back to a
		// UUIDv7 built from the clock and crypto/rand, which never returns an error.
		u = fallbackV7()
	}
	return prefix + "_" + base32.Encode(u)
}

func fallbackV7() uuid.UUID {
	var u uuid.UUID
	binary.BigEndian.PutUint64(u[0:8], uint64(time.Now().UnixMilli())<<16)
	_, _ = rand.Read(u[6:])
	u.SetVersion(uuid.V7)
	u.SetVariant(uuid.VariantRFC9562)
	return u
}

// Valid reports whether s is a well-formed TypeID with the given prefix.
func Valid(prefix, s string) bool {
	if !strings.HasPrefix(s, prefix+"_") || len(s) != len(prefix)+1+SuffixLen {
		return false
	}
	id, err := typeid.FromString(s)
	return err == nil && id.Prefix() == prefix
}
