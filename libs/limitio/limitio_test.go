package limitio

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReaderFailsPastItsLimit(t *testing.T) {
	errBig := errors.New("too big")
	for _, tc := range []struct {
		size int
		over bool
	}{{0, false}, {10, false}, {11, true}, {1000, true}} {
		r := NewReader(strings.NewReader(strings.Repeat("x", tc.size)), 10, errBig)
		_, err := io.ReadAll(r)
		if tc.over != (err != nil) || r.Over() != tc.over || (tc.over && !errors.Is(err, errBig)) {
			t.Errorf("%d bytes through a 10-byte limit: err %v, over %v; want over %v with the Reader's error", tc.size, err, r.Over(), tc.over)
		}
	}
}
