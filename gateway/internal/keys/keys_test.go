package keys

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestGenerateAndWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		k, err := Generate()
		if err != nil {
			t.Fatal(err)
		}
		if !WellFormed(k) || !strings.HasPrefix(k, Prefix) || seen[k] {
			t.Fatalf("bad or repeated key %q", k)
		}
		seen[k] = true
	}
	for _, bad := range []string{"", "capi_", "capi_" + strings.Repeat("a", 39), "capx_" + strings.Repeat("a", 40), "capi_" + strings.Repeat("-", 40)} {
		if WellFormed(bad) {
			t.Errorf("WellFormed(%q) = true", bad)
		}
	}
}

func TestHasherIsKeyed(t *testing.T) {
	if _, err := NewHasher([]byte("short")); err == nil {
		t.Fatal("short pepper accepted")
	}
	a, _ := NewHasher([]byte(strings.Repeat("a", 32)))
	b, _ := NewHasher([]byte(strings.Repeat("b", 32)))
	first, again := a.Hash("k"), a.Hash("k")
	switch {
	case first != again:
		t.Fatal("the hash of one key under one pepper must be stable")
	case first == b.Hash("k"):
		t.Fatal("the hash must depend on the pepper")
	case first == a.Hash("l"):
		t.Fatal("the hash must depend on the key")
	}
}

func TestCacheLookup(t *testing.T) {
	h, _ := NewHasher([]byte(strings.Repeat("p", 32)))
	c := NewCache(nil, h, 0, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	key, _ := Generate()
	c.Put(Key{ID: "key_1", Hash: h.Hash(key), TenantIDs: []string{"acme"}})
	if k := c.Lookup(key); k == nil || k.ID != "key_1" {
		t.Fatalf("Lookup = %+v", k)
	}
	other, _ := Generate()
	if c.Lookup(other) != nil || c.Lookup("") != nil || c.Lookup("not a key") != nil {
		t.Fatal("unknown keys must not be found")
	}
	c.Remove(h.Hash(key))
	if c.Lookup(key) != nil {
		t.Fatal("removed key still found")
	}
}

// A key found from the request's bytes is the key found from its string, memoised or not.
func TestLookupBytes(t *testing.T) {
	h, err := NewHasher([]byte(strings.Repeat("p", 32)))
	if err != nil {
		t.Fatal(err)
	}
	c := NewCache(nil, h, time.Second, nil, nil)
	key, _ := Generate()
	c.Put(Key{ID: "key_1", Hash: h.Hash(key), TenantIDs: []string{"acme"}})
	for i := 0; i < 2; i++ { // the second time from the memo
		if k := c.LookupBytes([]byte(key)); k == nil || k.ID != "key_1" {
			t.Fatalf("LookupBytes #%d = %v", i, k)
		}
		if k := c.Lookup(key); k == nil || k.ID != "key_1" {
			t.Fatalf("Lookup #%d = %v", i, k)
		}
	}
	other, _ := Generate()
	for _, b := range [][]byte{nil, []byte("hello"), []byte(other), []byte(key[:len(key)-1] + "!")} {
		if k := c.LookupBytes(b); k != nil {
			t.Errorf("LookupBytes(%q) = %v", b, k)
		}
	}
	b := []byte(key)
	if n := testing.AllocsPerRun(100, func() { c.LookupBytes(b) }); n != 0 {
		t.Errorf("a memoised LookupBytes allocates %v times", n)
	}
}

// A cache serves while it is younger than the bound, and is stale past it or before its
// first load.
func TestCacheFreshness(t *testing.T) {
	c := NewCache(nil, nil, time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err := c.Fresh(time.Hour); !errors.Is(err, ErrStale) {
		t.Fatalf("a cache never loaded must be stale, got %v", err)
	}
	c.loaded.Store(time.Now().Add(-10 * time.Second).UnixNano())
	if err := c.Fresh(20 * time.Second); err != nil {
		t.Fatalf("a cache loaded 10 s ago must be fresh within 20 s, got %v", err)
	}
	if err := c.Fresh(5 * time.Second); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "10s") {
		t.Fatalf("a cache loaded 10 s ago must be stale past 5 s, saying its age, got %v", err)
	}
}

// A scope is "<family>:<read|write>" with a known family or *; write includes read; a
// key without scopes may do everything; an expired key reports so from its expiry on.
func TestScopesAndExpiry(t *testing.T) {
	for s, want := range map[string]bool{"pages:read": true, "*:write": true, "webhooks:write": true,
		"pages:admin": false, "billing:read": false, "pages": false, ":read": false, "": false} {
		if ValidScope(s) != want {
			t.Errorf("ValidScope(%q) = %v", s, !want)
		}
	}
	k := Key{Scopes: []string{"pages:write", "topics:read"}}
	for _, c := range []struct {
		family, access string
		want           bool
	}{{"pages", Read, true}, {"pages", Write, true}, {"topics", Read, true},
		{"topics", Write, false}, {"persons", Read, false}} {
		if k.Allows(c.family, c.access) != c.want {
			t.Errorf("%v allows %s:%s = %v", k.Scopes, c.family, c.access, !c.want)
		}
	}
	if !(&Key{}).Allows("assets", Write) || !(&Key{Scopes: []string{"*:read"}}).Allows("assets", Read) {
		t.Error("no scopes allow everything; *:read allows every read")
	}
	now := time.Now()
	at := now.Add(time.Second)
	if (&Key{}).Expired(now) || (&Key{ExpiresAt: &at}).Expired(now) || !(&Key{ExpiresAt: &at}).Expired(at) {
		t.Error("a key expires exactly at ExpiresAt, and never without one")
	}
}
