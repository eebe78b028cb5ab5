package domain

import (
	"errors"
	"testing"
	"time"
)

func TestLifecycle(t *testing.T) {
	now := time.Now()
	a := Asset{State: Active, File: File{Key: "k"}, Preview: &File{Key: "p"}}
	if err := a.Restore(now); !errors.Is(err, ErrNotTrashed) {
		t.Fatalf("restore active: %v", err)
	}
	if err := a.Trash(now); err != nil || a.State != Trashed || a.TrashedAt == nil {
		t.Fatalf("trash: %v %+v", err, a)
	}
	if err := a.Trash(now); !errors.Is(err, ErrNotActive) {
		t.Fatalf("trash twice: %v", err)
	}
	if err := a.Restore(now); err != nil || a.State != Active || a.TrashedAt != nil {
		t.Fatalf("restore: %v %+v", err, a)
	}
	if keys := a.Delete(now); len(keys) != 2 || a.State != Deleted || a.DeletedAt == nil || a.HasBytes() {
		t.Fatalf("delete: %v %+v", keys, a)
	}
	if keys := a.Delete(now); keys != nil {
		t.Fatalf("delete twice returned %v", keys)
	}
	if !errors.Is(a.Trash(now), ErrNotActive) || !errors.Is(a.Restore(now), ErrNotTrashed) {
		t.Fatal("a deleted asset moved")
	}
}

func TestAccepts(t *testing.T) {
	for _, tc := range []struct {
		typ, media string
		ok         bool
	}{
		{TypeImage, "image/png", true},
		{TypeImage, "video/mp4", false},
		{TypeLogo, "image/svg+xml", true},
		{TypeLogo, "image/bmp", false},
		{TypeIcon, "image/x-icon", true},
		{TypeVideo, "video/webm", true},
		{TypeVideo, "image/gif", false},
		{TypeCustomComponent, "text/html", true},
		{TypeCustomComponent, "application/x-msdownload", false},
		{"nope", "image/png", false},
	} {
		if Accepts(tc.typ, tc.media) != tc.ok {
			t.Errorf("Accepts(%s, %s) != %v", tc.typ, tc.media, tc.ok)
		}
	}
}

// Tags are unique ignoring case (their shape is the document's: the upload tests check it).
func TestDuplicateTag(t *testing.T) {
	if DuplicateTag([]string{"a", "B", "b"}) != 2 || DuplicateTag([]string{"a", "b"}) != -1 || DuplicateTag([]string{"", "a", ""}) != -1 {
		t.Fatal("DuplicateTag")
	}
}
