package ports

import "testing"

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		h               string
		start, end      int64
		ok, satisfiable bool
	}{
		{"bytes=0-0", 0, 0, true, true},
		{"bytes=0-99", 0, 99, true, true},
		{"bytes=10-", 10, 99, true, true},
		{"bytes=-10", 90, 99, true, true},
		{"bytes=-1000", 0, 99, true, true},
		{"bytes=50-1000", 50, 99, true, true},
		{"bytes=100-", 0, 0, true, false},
		{"bytes=-0", 0, 0, true, false},
		{"bytes=5-1", 0, 0, false, false},
		{"bytes=0-1,5-6", 0, 0, false, false},
		{"items=0-1", 0, 0, false, false},
		{"bytes=a-b", 0, 0, false, false},
		{"bytes=1", 0, 0, false, false},
	} {
		s, e, ok, sat := parseRange(tc.h, 100)
		if s != tc.start || e != tc.end || ok != tc.ok || sat != tc.satisfiable {
			t.Errorf("%q: %d-%d ok=%v sat=%v", tc.h, s, e, ok, sat)
		}
	}
}
