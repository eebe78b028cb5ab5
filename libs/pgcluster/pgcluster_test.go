package pgcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReachableNamesTheClosedParent(t *testing.T) {
	root := t.TempDir()
	if err := os.Chmod(filepath.Dir(root), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(root, "open", "postgres")
	closed := filepath.Join(root, "closed", "postgres")
	for _, d := range []string{open, closed} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Dir(closed), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := reachable(open); err != nil {
		t.Fatalf("open: %v", err)
	}
	err := reachable(closed)
	if err == nil || !strings.Contains(err.Error(), filepath.Dir(closed)) {
		t.Fatalf("closed: %v", err)
	}
}
