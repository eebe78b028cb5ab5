// Package storage keeps the assets' bytes in one of two backends of domain.Storage: a
// local directory (the default for `make run`) and S3-compatible object storage (for
// clusters). Both stream: neither holds a whole object in memory.
package storage

import (
	"context"
	"fmt"
	"io"
	"strings"
)

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
