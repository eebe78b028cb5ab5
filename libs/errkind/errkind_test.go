package errkind

import (
	"errors"
	"fmt"
	"testing"
)

func TestOfFindsTheKindThroughWrapping(t *testing.T) {
	errGone := NotFound.New("topic not found")
	wrapped := fmt.Errorf("update topic: %w", errGone)
	if e := Of(wrapped); e == nil || e.Kind() != NotFound || e.Error() != "topic not found" {
		t.Fatalf("Of(%v) = %v: a wrapped domain error keeps its kind and message", wrapped, e)
	}
	if !errors.Is(wrapped, errGone) {
		t.Fatal("errors.Is must still match the declared error")
	}
	if Of(errors.New("disk on fire")) != nil {
		t.Fatal("an error without a kind has none")
	}
	at := Invalid.At("must be unique", "actions", 2, "actionId")
	if e := Of(fmt.Errorf("x: %w", at)); e.Kind() != Invalid || fmt.Sprint(e.Path) != "[actions 2 actionId]" {
		t.Fatalf("path lost: %v", e.Path)
	}
}
