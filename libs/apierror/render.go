package apierror

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/errkind"
	"github.com/customerapi/platform/libs/requestid"
)

// Envelope is the JSON body of every error response, as the specification defines it.
type Envelope struct {
	Code      Code   `json:"code"`
	Detail    string `json:"detail"`
	RequestID string `json:"requestId"`
	Status    int    `json:"status"`
	Title     string `json:"title"`
	Type      string `json:"type"`
	Details   any    `json:"details,omitempty"`
}

// MaxBodyBytes is the largest JSON request body accepted (1 MiB).
const MaxBodyBytes = 1 << 20

// Renderer writes errors as envelopes whose type URLs start with BaseURL.
type Renderer struct {
	// BaseURL is the public base address, e.g. http://127.0.0.1:25001.
	BaseURL string
	Log     *slog.Logger
}

// Envelope builds the envelope of e for the given request ID.
func (r Renderer) Envelope(e *Error, reqID string) Envelope {
	return Envelope{
		Code:      e.Code,
		Detail:    e.Detail,
		RequestID: reqID,
		Status:    e.Status,
		Title:     http.StatusText(e.Status),
		Type:      strings.TrimRight(r.BaseURL, "/") + "/errors/" + strings.ToLower(string(e.Code)),
		Details:   e.Details,
	}
}

// Write renders err (any error) as an envelope on c.
//
// nolint: contextcheck // c.UserContext() is the request's own context, not a new one.
func (r Renderer) Write(c *fiber.Ctx, err error) error {
	e := From(err)
	reqID := requestid.Ensure(c)
	if e.Status >= 500 && r.Log != nil {
		r.Log.LogAttrs(c.UserContext(), slog.LevelError, "request failed",
			slog.String("request_id", reqID), slog.String("method", c.Method()),
			slog.String("path", c.Path()), slog.Int("status", e.Status), slog.Any("error", err))
	}
	body, mErr := json.Marshal(r.Envelope(e, reqID))
	if mErr != nil {
		return mErr
	}
	for k, v := range e.Headers {
		c.Set(k, v)
	}
	requestid.Stamp(c, reqID) // the response may have been reset since the ID was set
	c.Status(e.Status)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(body)
}

// Handler returns a Fiber error handler that renders every error as an envelope.
func (r Renderer) Handler() fiber.ErrorHandler {
	return r.Write
}

// From maps any error to an *Error: an *Error as is, a domain error by its kind
// (errkind: NotFound 404, Conflict 409, Invalid 400 about the body), Fiber's own errors by
// status, anything else as Internal's answer (a dependency down or out of time, the
// request's deadline included, is a 503 with Retry-After there).
func From(err error) *Error {
	if e := As(err); e != nil {
		return e
	}
	if k := errkind.Of(err); k != nil {
		if e := fromKind(k); e != nil {
			return e
		}
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		return fromFiber(fe)
	}
	// A dependency down or timing out, the request's own deadline included (a
	// context.DeadlineExceeded is a net.Error that timed out): 503 with Retry-After.
	return Internal(err)
}

// fromKind is the one mapping of domain error kinds to answers.
func fromKind(k *errkind.Error) *Error {
	switch k.Kind() {
	case errkind.NotFound:
		return NotFound(k.Error())
	case errkind.Conflict:
		return Conflict(k.Error())
	case errkind.Invalid:
		path := k.Path
		if path == nil {
			path = []any{}
		}
		return Validation(FieldBody, Issue{Code: "custom", Message: k.Error(), Path: path})
	}
	return nil
}

func fromFiber(fe *fiber.Error) *Error {
	switch fe.Code {
	case fiber.StatusNotFound:
		return NotFound("no such route")
	case fiber.StatusMethodNotAllowed:
		return New(fiber.StatusMethodNotAllowed, CodeMethodNotAllowed, "method not allowed on this path")
	case fiber.StatusRequestEntityTooLarge:
		return Validation(FieldBody, Issue{Code: "too_big", Path: []any{},
			Message: "request body exceeds the limit of 1 MiB"})
	case fiber.StatusUnsupportedMediaType:
		return Validation(FieldBody, Issue{Code: "invalid_type", Path: []any{},
			Message: "request body must be application/json"})
	case fiber.StatusServiceUnavailable:
		return Unavailable(fe.Message)
	}
	switch {
	case fe.Code >= 500:
		return Internal(fe)
	case fe.Code == fiber.StatusBadRequest:
		return Validation(FieldBody, Issue{Code: "invalid_request", Path: []any{}, Message: fe.Message})
	case fe.Code >= 400:
		// Other client errors (408, 431, ...) keep their status and report as invalid input.
		return New(fe.Code, CodeValidation, fe.Message)
	}
	return Internal(fe)
}
