package timestamp

import (
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	tm := time.Date(2026, 1, 2, 3, 4, 5, 678912345, time.FixedZone("x", 3600))
	if got, want := Format(tm), "2026-01-02T02:04:05.678Z"; got != want {
		t.Fatalf("Format = %q, want %q", got, want)
	}
	if FormatPtr(nil) != nil {
		t.Fatal("FormatPtr(nil) != nil")
	}
	if got := *FormatPtr(&tm); got != "2026-01-02T02:04:05.678Z" {
		t.Fatalf("FormatPtr = %q", got)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"2026-01-02T03:04:05Z", true},
		{"2026-01-02T03:04:05.123+02:00", true},
		{"2026-01-02", true},
		{"2026-13-02", false},
		{"yesterday", false},
		{"", false},
	} {
		_, err := Parse(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("Parse(%q) err = %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}

func TestClockIsTruncatedAndNilIsTheSystemClock(t *testing.T) {
	at := time.Date(2026, 11, 24, 10, 0, 0, 123456789, time.UTC)
	if got := Clock(func() time.Time { return at }).Now(); !got.Equal(Truncate(at)) || got.Nanosecond()%int(time.Millisecond) != 0 {
		t.Errorf("a set clock gave %v, want %v (milliseconds only)", got, Truncate(at))
	}
	before := time.Now().Add(-time.Millisecond)
	if got := Clock(nil).Now(); got.Before(before) || got.Nanosecond()%int(time.Millisecond) != 0 {
		t.Errorf("the nil clock gave %v, want the system's time now to the millisecond", got)
	}
}
