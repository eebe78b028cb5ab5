package service

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCgroupMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		content string
		limit   int64
		ok      bool
	}{
		{"v2 limit", "536870912\n", 536870912, true},
		{"v2 no limit", "max\n", 0, false},
		{"v1 no limit", "9223372036854771712\n", 0, false},
		{"garbage", "lots\n", 0, false},
	} {
		limit, ok := cgroupMemoryLimit(filepath.Join(dir, "missing"), write(tc.name, tc.content))
		if limit != tc.limit || ok != tc.ok {
			t.Errorf("%s (%q): %d %v, want %d %v", tc.name, tc.content, limit, ok, tc.limit, tc.ok)
		}
	}
	if _, ok := cgroupMemoryLimit(filepath.Join(dir, "missing")); ok {
		t.Error("no cgroup file read as a limit")
	}
}
