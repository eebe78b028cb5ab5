package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/customerapi/platform/services/assets/internal/domain"
)

// partialDir holds objects being written; a finished one is renamed into place, so a
// reader never sees half an object.
const partialDir = ".partial"

// Local stores objects as files under a directory.
type Local struct {
	dir string
}

// NewLocal returns a Local rooted at dir, creating it, and removes partial files left
// by a crash more than an hour ago (uploads finish well within that).
func NewLocal(dir string) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: %s: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Join(abs, partialDir), 0o750); err != nil {
		return nil, fmt.Errorf("storage: create %s: %w", abs, err)
	}
	l := &Local{dir: abs}
	l.sweepPartial(time.Now().Add(-time.Hour))
	return l, nil
}

func (l *Local) sweepPartial(before time.Time) {
	entries, err := os.ReadDir(filepath.Join(l.dir, partialDir))
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.ModTime().Before(before) {
			_ = os.Remove(filepath.Join(l.dir, partialDir, e.Name()))
		}
	}
}

func (l *Local) path(key string) (string, error) {
	if err := ValidKey(key); err != nil {
		return "", err
	}
	return filepath.Join(l.dir, filepath.FromSlash(key)), nil
}

// Put writes r to a partial file, syncs it and renames it to the key's path.
func (l *Local) Put(ctx context.Context, key string, r io.Reader, _ string) (n int64, err error) {
	final, err := l.path(key)
	if err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(filepath.Join(l.dir, partialDir), "put-*")
	if err != nil {
		return 0, fmt.Errorf("storage: create partial file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if n, err = io.Copy(f, ctxReader{ctx, r}); err != nil {
		return n, fmt.Errorf("storage: write %s: %w", key, err)
	}
	if err = f.Sync(); err != nil {
		return n, fmt.Errorf("storage: sync %s: %w", key, err)
	}
	if err = f.Close(); err != nil {
		return n, fmt.Errorf("storage: close %s: %w", key, err)
	}
	if err = os.MkdirAll(filepath.Dir(final), 0o750); err != nil {
		return n, fmt.Errorf("storage: create directory of %s: %w", key, err)
	}
	if err = os.Rename(f.Name(), final); err != nil {
		return n, fmt.Errorf("storage: place %s: %w", key, err)
	}
	return n, nil
}

// Open opens the file and positions it at offset.
func (l *Local) Open(_ context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	p, err := l.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, domain.ErrObjectNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", key, err)
	}
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			f.Close()
			return nil, fmt.Errorf("storage: seek %s: %w", key, err)
		}
	}
	if length < 0 {
		return f, nil
	}
	return readCloser{io.LimitReader(f, length), f}, nil
}

// Delete removes the file.
func (l *Local) Delete(_ context.Context, key string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("storage: delete %s: %w", key, err)
	}
	return nil
}

// Check verifies that the directory is there and writable.
func (l *Local) Check(context.Context) error {
	f, err := os.CreateTemp(filepath.Join(l.dir, partialDir), "check-*")
	if err != nil {
		return fmt.Errorf("storage: %s is not writable: %w", l.dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
