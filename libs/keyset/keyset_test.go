package keyset

import (
	"errors"
	"testing"
	"time"
)

func TestPositionsRoundTripAndRefuseOtherShapes(t *testing.T) {
	at := time.Date(2026, 3, 5, 16, 20, 2, 350123000, time.UTC)
	p := At(at, "session_1")
	got, err := Parse(p.Keys())
	if err != nil || *got != p || !got.Time().Equal(at) {
		t.Fatalf("Parse(Keys()) = %v, %v; want %v at %v", got, err, p, at)
	}
	if got, err := Parse(nil); got != nil || err != nil {
		t.Fatal("nil keys are the first page")
	}
	for _, keys := range [][]string{{}, {"1"}, {"x", "id"}, {"1", ""}, {"1", "a", "b"}} {
		if _, err := Parse(keys); !errors.Is(err, ErrMalformed) {
			t.Fatalf("Parse(%q) accepted a malformed position", keys)
		}
	}
	if id, err := ParseID([]string{"asset_1"}); id != "asset_1" || err != nil {
		t.Fatal("ParseID of one key")
	}
	if id, err := ParseID(nil); id != "" || err != nil {
		t.Fatal("ParseID of the first page")
	}
	for _, keys := range [][]string{{}, {""}, {"a", "b"}} {
		if _, err := ParseID(keys); !errors.Is(err, ErrMalformed) {
			t.Fatalf("ParseID(%q) accepted a malformed position", keys)
		}
	}
}
