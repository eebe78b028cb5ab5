package bodylimit

import (
	"bytes"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/customerapi/platform/libs/apierror"
)

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
