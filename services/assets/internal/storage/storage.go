// Package storage keeps the assets' bytes behind one small interface with two backends:
// a local directory (the default for `make run`) and S3-compatible object storage (for
// clusters). Both stream: neither holds a whole object in memory.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrNotFound is returned by Open for a key that holds no object.
var ErrNotFound = errors.New("storage: object not found")

// Storage holds objects by key.
type Storage interface {
	// Put stores the bytes read from r under key and returns how many there were. The
	// object appears whole or not at all: when r fails (a client that went away, a size
	// limit) or ctx ends, nothing is left under key.
	Put(ctx context.Context, key string, r io.Reader, contentType string) (int64, error)
	// Open reads length bytes of the object from offset (length < 0: to the end).
	// A missing object is ErrNotFound.
	Open(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)
	// Delete removes the object; removing a missing one is not an error.
	Delete(ctx context.Context, key string) error
	// Check reports whether the storage can be used (readiness).
	Check(ctx context.Context) error
}

// ValidKey reports whether key is a relative slash-separated path of safe characters with
// no empty, "." or ".." segment, so that no backend can be steered outside its root.
func ValidKey(key string) error {
	if key == "" || len(key) > 512 {
		return fmt.Errorf("storage: key %q: length must be 1..512", key)
	}
	for _, r := range key {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/", r)
		if !ok {
			return fmt.Errorf("storage: key %q: character %q not allowed", key, r)
		}
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("storage: key %q: empty, . or .. segment", key)
		}
	}
	return nil
}

// ctxReader fails reads once ctx is done, so a Put stops when its request is abandoned.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// readCloser joins a limited reader with the closer of what it reads from.
type readCloser struct {
	io.Reader
	io.Closer
}
