package requestid

import (
	"context"
	"strings"
	"testing"
)

func TestSane(t *testing.T) {
	for id, want := range map[string]bool{
		"abc-123":                true,
		"req_01h2.x:y":           true,
		"":                       false,
		strings.Repeat("a", 128): true,
		strings.Repeat("a", 129): false,
		"has space":              false,
		"new\nline":              false,
		"quote\"":                false,
		"ünïcode":                false,
	} {
		if got := Sane(id); got != want {
			t.Errorf("Sane(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestContext(t *testing.T) {
	ctx := With(context.Background(), "r1")
	if From(ctx) != "r1" || From(context.Background()) != "" {
		t.Fatal("request ID not carried by the context")
	}
	if !strings.HasPrefix(New(), "req_") {
		t.Fatal("New lacks the req_ prefix")
	}
}
