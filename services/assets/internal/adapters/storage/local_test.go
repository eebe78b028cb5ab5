package storage_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/customerapi/platform/services/assets/internal/adapters/storage"
	"github.com/customerapi/platform/services/assets/internal/domain"
)

func TestLocal(t *testing.T) {
	suite(t, func(t *testing.T) domain.Storage {
		s, err := storage.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// Partial files a crash left behind are removed at the next start once they are old.
func TestLocalSweepsOldPartialFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := storage.NewLocal(dir); err != nil {
		t.Fatal(err)
	}
	old, fresh := filepath.Join(dir, ".partial", "put-old"), filepath.Join(dir, ".partial", "put-fresh")
	for _, p := range []string{old, fresh} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.NewLocal(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatal("old partial file survived")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatal("a fresh partial file (an upload in progress) was removed")
	}
}
