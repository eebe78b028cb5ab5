package bodylimit

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/customerapi/platform/libs/apierror"
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

func TestBufferKeepsSmallBodiesAndRefusesLargeOnes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int
		declared int // -1: chunked
		stream   bool
		tooBig   bool
	}{
		{"small, not streamed", 100, 100, false, false},
		{"1 MiB, not streamed", apierror.MaxBodyBytes, apierror.MaxBodyBytes, false, false},
		{"over 1 MiB, not streamed", apierror.MaxBodyBytes + 1, apierror.MaxBodyBytes + 1, false, true},
		{"small, streamed", 100, 100, true, false},
		{"1 MiB, chunked", apierror.MaxBodyBytes, -1, true, false},
		{"over 1 MiB, chunked", apierror.MaxBodyBytes + 1, -1, true, true},
		{"declared over the hard limit", 10, HardLimit + 1, true, true},
	} {
		var req fasthttp.Request
		body := bytes.Repeat([]byte("x"), tc.size)
		if tc.stream {
			req.SetBodyStream(bytes.NewReader(body), tc.declared)
			req.Header.SetContentLength(tc.declared)
		} else {
			req.SetBody(body)
		}
		err := Buffer(&req)
		switch {
		case tc.tooBig && (err == nil || err.Status != 400):
			t.Errorf("%s: %v, want the 400 too_big", tc.name, err)
		case !tc.tooBig && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case !tc.tooBig && (req.IsBodyStream() || len(req.Body()) != tc.size):
			t.Errorf("%s: body of %d bytes (streamed %v) after Buffer, want its %d bytes in memory", tc.name, len(req.Body()), req.IsBodyStream(), tc.size)
		}
	}
}
