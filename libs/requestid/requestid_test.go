package requestid

import (
	"context"
	"encoding/binary"
	mrand "math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/uuid/v5"
	"go.jetify.com/typeid"
	"go.jetify.com/typeid/base32"

	"github.com/customerapi/platform/libs/ids"
)

func TestSane(t *testing.T) {
	for id, want := range map[string]bool{
		"abc-123":                true,
		"req_01h2.x:y":           true,
		"":                       false,
		strings.Repeat("a", 128): true,
		strings.Repeat("a", 129): false,
		"has space":              false,
		"new\nline":              false,
		"quote\"":                false,
		"ünïcode":                false,
	} {
		if got := Sane(id); got != want {
			t.Errorf("Sane(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestContext(t *testing.T) {
	ctx := With(context.Background(), "r1")
	if From(ctx) != "r1" || From(context.Background()) != "" {
		t.Fatal("request ID not carried by the context")
	}
	if !strings.HasPrefix(New(), "req_") {
		t.Fatal("New lacks the req_ prefix")
	}
}

// New makes TypeIDs (prefix req), TypeID's base32 of a UUIDv7 of the current
// millisecond, all different.
func TestNewIsATypeID(t *testing.T) {
	seen := map[string]bool{}
	before := time.Now().UnixMilli()
	for i := 0; i < 10000; i++ {
		id := New()
		if !ids.Valid("req", id) || seen[id] {
			t.Fatalf("New() = %q: not a fresh TypeID", id)
		}
		seen[id] = true
		tid, err := typeid.FromString(id)
		if err != nil {
			t.Fatal(err)
		}
		u, err := uuid.FromString(tid.UUID())
		if err != nil || u.Version() != 7 || u[8]>>6 != 0b10 {
			t.Fatalf("%s: %v, version %d, variant bits %b", id, err, u.Version(), u[8]>>6)
		}
		if ms := int64(binary.BigEndian.Uint64(u[:8]) >> 16); ms < before || ms > time.Now().UnixMilli() {
			t.Fatalf("%s: time %d not now", id, ms)
		}
	}
}

func TestAppendBase32IsTypeIDs(t *testing.T) {
	r := mrand.New(mrand.NewPCG(1, 2))
	for i := 0; i < 1000; i++ {
		hi, lo := r.Uint64(), r.Uint64()
		if i == 0 {
			hi, lo = ^uint64(0), ^uint64(0)
		}
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], hi)
		binary.BigEndian.PutUint64(b[8:], lo)
		if got, want := string(appendBase32(nil, hi, lo)), base32.Encode(b); got != want {
			t.Fatalf("%x%x: %s, want %s", hi, lo, got, want)
		}
	}
}

func TestNewAllocatesOnce(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = New() }); n != 1 {
		t.Fatalf("New: %v allocations", n)
	}
}
