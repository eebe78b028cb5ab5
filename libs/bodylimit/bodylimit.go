// Package bodylimit bounds request bodies before anything buffers or stores them: the
// buffering of a streamed body up to the API's 1 MiB (every body but the streamed
// uploads, which libs/limitio's Reader bounds).
package bodylimit

import (
	"io"

	"github.com/valyala/fasthttp"

	"github.com/customerapi/platform/libs/apierror"
)

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
