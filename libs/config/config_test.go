package config

import (
	"strings"
	"testing"
	"time"
)

func TestEnv(t *testing.T) {
	e := FromMap(map[string]string{
		"S": " x ", "N": "7", "BAD_N": "x", "B": "true", "D": "250ms", "L": "a, b,,c",
		"DS": "1s,2m", "HEX": strings.Repeat("ab", 32), "SHORT": "abc", "EMPTY": "  ",
	})
	if e.String("S", "d") != "x" || e.String("MISSING", "d") != "d" || e.String("EMPTY", "d") != "d" {
		t.Fatal("String")
	}
	if e.Int("N", 1) != 7 || e.Int("MISSING", 1) != 1 {
		t.Fatal("Int")
	}
	if !e.Bool("B", false) || e.Duration("D", 0) != 250*time.Millisecond {
		t.Fatal("Bool/Duration")
	}
	if got := e.List("L", nil); len(got) != 3 || got[2] != "c" {
		t.Fatalf("List = %v", got)
	}
	if got := e.Durations("DS", nil); len(got) != 2 || got[1] != 2*time.Minute {
		t.Fatalf("Durations = %v", got)
	}
	if got := e.Secret("HEX", 32); len(got) != 32 {
		t.Fatalf("Secret = %d bytes", len(got))
	}
	if e.Err() != nil {
		t.Fatalf("unexpected error %v", e.Err())
	}
	e.Int("BAD_N", 0)
	e.Required("MISSING")
	e.Secret("SHORT", 16)
	err := e.Err()
	if err == nil || !strings.Contains(err.Error(), "BAD_N") || !strings.Contains(err.Error(), "MISSING") || !strings.Contains(err.Error(), "SHORT") {
		t.Fatalf("Err = %v", err)
	}
}
