// Package bodylimit bounds request bodies before anything buffers or stores them: a
// reader that fails past a limit (streamed uploads), and the buffering of a streamed
// body up to the API's 1 MiB (every other body).
package bodylimit

import (
	"io"

	"github.com/valyala/fasthttp"

	"github.com/customerapi/platform/libs/apierror"
)

// Reader reads from an underlying reader and fails once more than its limit was read.
type Reader struct {
	r    io.Reader
	left int64
	err  error
	over bool
}

// NewReader returns a Reader of r that fails with err once more than limit bytes were
// read.
func NewReader(r io.Reader, limit int64, err error) *Reader {
	return &Reader{r: r, left: limit, err: err}
}

// Read reads from the underlying reader; past the limit it returns the Reader's error.
func (l *Reader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		l.over = true
		return n, l.err
	}
	return n, err
}

// Over tells whether more than the limit was read.
func (l *Reader) Over() bool { return l.over }

// HardLimit is the most of a body over apierror.MaxBodyBytes that Buffer reads, so that
// the client gets the 400 rather than a reset; a body declared longer is refused before
// it is read (and its connection closed by the server).
const HardLimit = 4 * apierror.MaxBodyBytes

// Buffer replaces a streamed request body of at most apierror.MaxBodyBytes by its bytes,
// and answers a larger one, streamed or not, with TooBig.
func Buffer(req *fasthttp.Request) *apierror.Error {
	if !req.IsBodyStream() {
		if len(req.Body()) > apierror.MaxBodyBytes {
			return TooBig()
		}
		return nil
	}
	if req.Header.ContentLength() > HardLimit {
		return TooBig()
	}
	stream := req.BodyStream()
	b, err := io.ReadAll(io.LimitReader(stream, apierror.MaxBodyBytes+1))
	if err != nil {
		return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_json", Path: []any{},
			Message: "the request body could not be read"})
	}
	if len(b) > apierror.MaxBodyBytes {
		_, _ = io.CopyN(io.Discard, stream, HardLimit) // bounded: the client reads the answer
		return TooBig()
	}
	req.SetBodyRaw(b)
	return nil
}

// TooBig is the 400 of a body over apierror.MaxBodyBytes.
func TooBig() *apierror.Error {
	return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "too_big", Path: []any{},
		Message: "request body exceeds the limit of 1 MiB"})
}
