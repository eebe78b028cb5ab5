package apierror

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/errkind"
)

func TestFromMapsEveryFailure(t *testing.T) {
	for name, tc := range map[string]struct {
		err    error
		status int
		code   Code
	}{
		"api error":          {Conflict("x"), 409, CodeConflict},
		"wrapped api error":  {fmt.Errorf("ctx: %w", NotFound("x")), 404, CodeNotFound},
		"fiber 404":          {fiber.ErrNotFound, 404, CodeNotFound},
		"fiber 405":          {fiber.ErrMethodNotAllowed, 405, CodeMethodNotAllowed},
		"fiber 413":          {fiber.ErrRequestEntityTooLarge, 400, CodeValidation},
		"fiber 400":          {fiber.NewError(400, "bad"), 400, CodeValidation},
		"fiber 431":          {fiber.ErrRequestHeaderFieldsTooLarge, 431, CodeValidation},
		"fiber 503":          {fiber.ErrServiceUnavailable, 503, CodeServiceUnavailable},
		"fiber 502":          {fiber.ErrBadGateway, 500, CodeInternal},
		"deadline":           {context.DeadlineExceeded, 503, CodeServiceUnavailable},
		"anything else":      {errors.New("boom"), 500, CodeInternal},
		"validation":         {Validation(FieldQuery, Issue{Code: "c", Message: "m", Path: []any{"limit"}}), 400, CodeValidation},
		"unauthorized":       {Unauthorized(), 401, CodeUnauthorized},
		"forbidden":          {Forbidden("no"), 403, CodeForbidden},
		"unavailable":        {Unavailable("later"), 503, CodeServiceUnavailable},
		"internal wraps":     {Internal(errors.New("cause")), 500, CodeInternal},
		"not found with fmt": {NotFoundf("page %s", "p1"), 404, CodeNotFound},
	} {
		e := From(tc.err)
		if e.Status != tc.status || e.Code != tc.code || e.Detail == "" {
			t.Errorf("%s: got %d %s %q", name, e.Status, e.Code, e.Detail)
		}
	}
}

// rejection is an error of a library that knows it is the caller's fault.
type rejection struct{}

func (rejection) Error() string                     { return "too large for Kafka" }
func (rejection) Rejection() (code, message string) { return "too_big", "send less" }

func TestARejectionIsTheCallersFaultHoweverItIsWrapped(t *testing.T) {
	for name, err := range map[string]error{
		"as is":               rejection{},
		"wrapped":             fmt.Errorf("store: %w", rejection{}),
		"wrapped as internal": Internal(fmt.Errorf("store: %w", rejection{})),
	} {
		e := From(err)
		if e.Status != 400 || e.Code != CodeValidation {
			t.Errorf("%s: got %d %s, want 400 VALIDATION_ERROR", name, e.Status, e.Code)
			continue
		}
		issues := e.Details.([]FieldIssues)
		if issues[0].Field != FieldBody || issues[0].Issues[0].Code != "too_big" || issues[0].Issues[0].Message != "send less" ||
			!errors.Is(e, rejection{}) {
			t.Errorf("%s: details %+v", name, issues)
		}
	}
}

func TestInternalHidesItsCause(t *testing.T) {
	e := Internal(errors.New("password=hunter2"))
	env := Renderer{BaseURL: "http://x"}.Envelope(e, "r")
	if env.Detail != "an unexpected error occurred" || !errors.Is(e, e.Unwrap()) {
		t.Fatalf("envelope = %+v", env)
	}
	if env.Title != http.StatusText(500) || env.Type != "http://x/errors/internal" {
		t.Fatalf("envelope = %+v", env)
	}
}

func TestValidationSummary(t *testing.T) {
	e := Validation(FieldBody, Issue{Code: "too_big", Message: "too long", Path: []any{"tags", 2}},
		Issue{Code: "x", Message: "y", Path: []any{}})
	if e.Detail != "invalid body.tags.2: too long (and 1 more issues)" {
		t.Fatalf("detail = %q", e.Detail)
	}
	if got := InvalidParam(FieldPath, "account_id", "invalid_string", "bad").Detail; got != "invalid path.account_id: bad" {
		t.Fatalf("detail = %q", got)
	}
}

// A domain error is mapped by its kind, wrapped or not, in one place.
func TestFromMapsDomainErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   Code
	}{
		{errkind.NotFound.New("topic not found"), 404, CodeNotFound},
		{fmt.Errorf("update: %w", errkind.Conflict.New("the page is archived")), 409, CodeConflict},
		{errkind.Invalid.At("must be unique", "actions", 1, "actionId"), 400, CodeValidation},
		{errors.New("disk on fire"), 500, CodeInternal},
	} {
		e := From(tc.err)
		if e.Status != tc.status || e.Code != tc.code {
			t.Fatalf("From(%v) = %d %s, want %d %s", tc.err, e.Status, e.Code, tc.status, tc.code)
		}
		if (tc.status == 404 || tc.status == 409) && e.Detail != errkind.Of(tc.err).Error() {
			t.Fatalf("detail %q, want the domain error's message", e.Detail)
		}
	}
	v := From(errkind.Invalid.At("must be unique", "actions", 1, "actionId"))
	if issues := v.Details.([]FieldIssues); issues[0].Field != FieldBody || fmt.Sprint(issues[0].Issues[0].Path) != "[actions 1 actionId]" {
		t.Fatalf("validation details %+v", v.Details)
	}
}

// A dependency that is down answers the same through From as through Internal (the
// error switches the services had called Internal): 503 with Retry-After.
func TestFromAnswersAnUnavailableDependencyAsInternalDoes(t *testing.T) {
	err := fmt.Errorf("get topic: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED})
	got, want := From(err), Internal(err)
	if got.Status != 503 || got.Headers["Retry-After"] != "1" || got.Detail != want.Detail {
		t.Fatalf("From gave %d %q %v, want Internal's 503 %q with Retry-After", got.Status, got.Detail, got.Headers, want.Detail)
	}
}
