package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/customerapi/platform/services/assets/internal/domain"
)

// randomBytes returns n deterministic pseudo-random bytes.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// failingReader yields n bytes of data, then fails.
type failingReader struct {
	data []byte
}

var errBroken = errors.New("client went away")

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, errBroken
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func read(ctx context.Context, t *testing.T, s domain.Storage, key string, offset, length int64) []byte {
	t.Helper()
	rc, err := s.Open(ctx, key, offset, length)
	if err != nil {
		t.Fatalf("open %s [%d,%d]: %v", key, offset, length, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return b
}

func missing(ctx context.Context, t *testing.T, s domain.Storage, key string) {
	t.Helper()
	rc, err := s.Open(ctx, key, 0, -1)
	if err == nil {
		rc.Close()
		t.Fatalf("%s exists, want it missing", key)
	}
	if !errors.Is(err, domain.ErrObjectNotFound) {
		t.Fatalf("open %s: %v, want ErrObjectNotFound", key, err)
	}
}

// suite is the one test suite every storage backend passes, run against the backend
// that open returns (a fresh, empty one per call).
// large is the size of the object that crosses the backend's buffering thresholds.
func suite(t *testing.T, open func(t *testing.T) domain.Storage) {
	ctx := context.Background()
	const large = 6<<20 + 12345

	t.Run("round trip", func(t *testing.T) {
		s := open(t)
		for i, size := range []int{1, 4096, 1 << 20, 1<<20 + 1, large} {
			key := fmt.Sprintf("acme/file_%d", i)
			data := randomBytes(uint64(i), size)
			n, err := s.Put(ctx, key, bytes.NewReader(data), "application/octet-stream")
			if err != nil || n != int64(size) {
				t.Fatalf("put %d bytes: n=%d err=%v", size, n, err)
			}
			if got := read(ctx, t, s, key, 0, -1); !bytes.Equal(got, data) {
				t.Fatalf("%d bytes: read back %d different bytes", size, len(got))
			}
		}
	})

	t.Run("ranges", func(t *testing.T) {
		s := open(t)
		data := randomBytes(7, large)
		if _, err := s.Put(ctx, "acme/ranged", bytes.NewReader(data), "video/mp4"); err != nil {
			t.Fatal(err)
		}
		for _, r := range []struct{ off, n int64 }{
			{0, 1}, {0, 100}, {5, 10}, {int64(large) - 1, 1}, {1 << 20, 3 << 20}, {0, int64(large)}, {10, 0},
		} {
			if got := read(ctx, t, s, "acme/ranged", r.off, r.n); !bytes.Equal(got, data[r.off:r.off+r.n]) {
				t.Fatalf("range %d+%d: %d bytes, not the stored ones", r.off, r.n, len(got))
			}
		}
		if got := read(ctx, t, s, "acme/ranged", int64(large)-10, -1); !bytes.Equal(got, data[large-10:]) {
			t.Fatal("range to the end")
		}
	})

	t.Run("missing and delete", func(t *testing.T) {
		s := open(t)
		missing(ctx, t, s, "acme/never")
		if err := s.Delete(ctx, "acme/never"); err != nil {
			t.Fatalf("deleting a missing object: %v", err)
		}
		if _, err := s.Put(ctx, "acme/doomed", bytes.NewReader([]byte("x")), "text/plain"); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "acme/doomed"); err != nil {
			t.Fatal(err)
		}
		missing(ctx, t, s, "acme/doomed")
	})

	t.Run("a failed put leaves nothing", func(t *testing.T) {
		s := open(t)
		for i, size := range []int{0, 1000, large} {
			key := fmt.Sprintf("acme/broken_%d", i)
			if _, err := s.Put(ctx, key, &failingReader{data: randomBytes(1, size)}, "image/png"); !errors.Is(err, errBroken) {
				t.Fatalf("put failing after %d bytes: %v, want the reader's error", size, err)
			}
			missing(ctx, t, s, key)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.Put(cctx, "acme/cancelled", bytes.NewReader(randomBytes(2, 100)), "image/png"); err == nil {
			t.Fatal("put with a cancelled context succeeded")
		}
		missing(ctx, t, s, "acme/cancelled")
	})

	t.Run("keys stay inside", func(t *testing.T) {
		s := open(t)
		for _, key := range []string{"", "../escape", "/abs", "a//b", "a/./b", "a/../b", "sp ace", "a\\b"} {
			if _, err := s.Put(ctx, key, bytes.NewReader([]byte("x")), "text/plain"); err == nil {
				t.Errorf("put %q succeeded", key)
			}
			if _, err := s.Open(ctx, key, 0, -1); err == nil || errors.Is(err, domain.ErrObjectNotFound) {
				t.Errorf("open %q: %v, want a key error", key, err)
			}
		}
	})

	t.Run("concurrent puts", func(t *testing.T) {
		s := open(t)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				data := randomBytes(uint64(100+i), 200_000)
				if _, err := s.Put(ctx, fmt.Sprintf("t%d/f", i), bytes.NewReader(data), "image/png"); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		for i := range 8 {
			if got := read(ctx, t, s, fmt.Sprintf("t%d/f", i), 0, -1); !bytes.Equal(got, randomBytes(uint64(100+i), 200_000)) {
				t.Fatalf("object %d corrupted", i)
			}
		}
	})

	t.Run("check", func(t *testing.T) {
		if err := open(t).Check(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
