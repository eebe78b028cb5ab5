// Package customerapi is the Go client of the Customer API.
//
// client.gen.go is generated from api/openapi.yaml by oapi-codegen (`make clients`) and
// never edited by hand. This file adds what generators do badly: the x-api-key option,
// retries of 429 and 503 that honour Retry-After, typed errors carrying the error
// envelope, and an iterator over a list's pages (pagination.go).
//
//	c, _ := customerapi.New("http://127.0.0.1:25001", os.Getenv("CUSTOMER_API_KEY"))
//	r, err := c.CreateTopicWithResponse(ctx, nil, customerapi.TopicCreate{Title: "Pricing"})
//	// err is a *customerapi.Error for any answer that is not 2xx; r.JSON201 is the topic.
package customerapi

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// Error is an answer that is not 2xx, with the API's error envelope.
type Error struct {
	// StatusCode is the HTTP status.
	StatusCode int `json:"status"`
	// Code is the machine-readable class: NOT_FOUND, VALIDATION_ERROR, RATE_LIMITED, …
	Code string `json:"code"`
	// Type is the URL of the code's description ({base}/errors/<code>).
	Type   string `json:"type"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
	// RequestID is the request's ID; quote it when reporting a problem.
	RequestID string `json:"requestId"`
	// Details holds the structured details as sent (validation issues, rate limit state).
	Details json.RawMessage `json:"details,omitempty"`
	// Body is the raw answer (when it was not an envelope, e.g. from a proxy in between).
	Body []byte `json:"-"`
}

// Error implements error.
func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("customerapi: HTTP %d", e.StatusCode)
	}
	return fmt.Sprintf("customerapi: %d %s: %s (request %s)", e.StatusCode, e.Code, e.Detail, e.RequestID)
}

// ValidationIssues decodes the details of a VALIDATION_ERROR (nil otherwise).
func (e *Error) ValidationIssues() []ValidationDetail {
	var d []ValidationDetail
	if e.Code != "VALIDATION_ERROR" || json.Unmarshal(e.Details, &d) != nil {
		return nil
	}
	return d
}

// UnauthorizedReason is details.reason of a 401 (missing_key, wrong_header, malformed_key,
// unknown_key, conflicting_keys; empty for any other error or a 401 without one).
func (e *Error) UnauthorizedReason() UnauthorizedDetailsReason {
	var d UnauthorizedDetails
	if e.Code != "UNAUTHORIZED" || json.Unmarshal(e.Details, &d) != nil {
		return ""
	}
	return d.Reason
}

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusNotFound
}

// IsNotModified reports whether err is the 304 of a read sent with IfNoneMatch: the
// representation has not changed.
func IsNotModified(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusNotModified
}

// IsPreconditionFailed reports whether err is the 412 of a write sent with IfMatch: the
// resource changed since that version (its ETag is in the error's details).
func IsPreconditionFailed(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusPreconditionFailed
}

// IfMatch makes a write conditional on the resource still having etag (an answer's
// ETag header: resp.HTTPResponse.Header.Get("ETag")): pass it as a request editor.
func IfMatch(etag string) RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set("If-Match", etag)
		return nil
	}
}

// IfNoneMatch makes a read answer 304 (IsNotModified) when the resource still has etag.
func IfNoneMatch(etag string) RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set("If-None-Match", etag)
		return nil
	}
}

// Option configures New.
type Option func(*settings)

type settings struct {
	http       HttpRequestDoer
	maxRetries int
	maxWait    time.Duration
	editors    []RequestEditorFn
}

// WithHTTPDoer sends requests with doer instead of http.DefaultClient.
func WithHTTPDoer(doer HttpRequestDoer) Option { return func(s *settings) { s.http = doer } }

// WithRetries sets how often a 429 or 503 answer is retried (default 3; 0 turns retries
// off) and the longest wait between tries (default 30 s; a longer Retry-After is an error).
func WithRetries(n int, maxWait time.Duration) Option {
	return func(s *settings) { s.maxRetries, s.maxWait = n, maxWait }
}

// WithRequestEditor adds a function that edits every request (headers, tracing).
func WithRequestEditor(fn RequestEditorFn) Option {
	return func(s *settings) { s.editors = append(s.editors, fn) }
}

// API is the generated client with responses (ClientWithResponses), sending x-api-key,
// retrying and turning every answer that is not 2xx into an *Error.
type API struct {
	*ClientWithResponses
}

// New returns a client of the API at baseURL (e.g. http://127.0.0.1:25001) using apiKey.
func New(baseURL, apiKey string, opts ...Option) (*API, error) {
	s := settings{http: http.DefaultClient, maxRetries: 3, maxWait: 30 * time.Second}
	for _, o := range opts {
		o(&s)
	}
	key := func(_ context.Context, req *http.Request) error {
		req.Header.Set("x-api-key", apiKey)
		return nil
	}
	copts := []ClientOption{
		WithHTTPClient(&doer{next: s.http, maxRetries: s.maxRetries, maxWait: s.maxWait}),
		WithRequestEditorFn(key),
	}
	for _, e := range s.editors {
		copts = append(copts, WithRequestEditorFn(e))
	}
	c, err := NewClientWithResponses(baseURL, copts...)
	if err != nil {
		return nil, err
	}
	return &API{ClientWithResponses: c}, nil
}

// doer retries 429 and 503 and turns answers that are not 2xx into *Error.
type doer struct {
	next       HttpRequestDoer
	maxRetries int
	maxWait    time.Duration
}

// retryable says whether an answer may be retried. A 429 was refused before any work,
// so every method may be; a 503 only when the request is idempotent or the server asked
// for a retry with Retry-After (a write that timed out upstream may have happened).
func retryable(req *http.Request, res *http.Response) bool {
	switch res.StatusCode {
	case http.StatusTooManyRequests:
		return true
	case http.StatusServiceUnavailable:
		switch req.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
			return true
		}
		// A write with an Idempotency-Key runs at most once however often it is sent.
		return res.Header.Get("Retry-After") != "" || req.Header.Get(IdempotencyKeyHeader) != ""
	}
	return false
}

// IdempotencyKeyHeader names a POST for its retries (docs/api.md, "Idempotent retries").
const IdempotencyKeyHeader = "Idempotency-Key"

// NewIdempotencyKey returns a random key (a UUID v4) for one POST and its retries.
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = crand.Read(b[:]) // never fails (crypto/rand's contract)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Do sends req, retrying as the package documents; a POST without an Idempotency-Key
// gets a new one first, so that its retries (by this client or by the caller with the
// same request) cannot run it twice.
func (d *doer) Do(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.Header.Get(IdempotencyKeyHeader) == "" {
		req.Header.Set(IdempotencyKeyHeader, NewIdempotencyKey())
	}
	for try := 0; ; try++ {
		res, err := d.next.Do(req)
		if err != nil {
			return nil, err
		}
		if res.StatusCode >= 200 && res.StatusCode < 300 {
			return res, nil
		}
		if try < d.maxRetries && retryable(req, res) && (req.Body == nil || req.GetBody != nil) {
			wait := retryAfter(res.Header.Get("Retry-After"), try)
			if wait <= d.maxWait {
				_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
				res.Body.Close()
				if err := sleep(req.Context(), wait); err != nil {
					return nil, err
				}
				if req.GetBody != nil {
					if req.Body, err = req.GetBody(); err != nil {
						return nil, fmt.Errorf("customerapi: rewind body for a retry: %w", err)
					}
				}
				continue
			}
		}
		return nil, readError(res)
	}
}

// retryAfter reads Retry-After (seconds or an HTTP date); without it the wait doubles
// from 500 ms with jitter.
func retryAfter(h string, try int) time.Duration {
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(time.Until(t), 0)
	}
	base := 500 * time.Millisecond << try
	return base/2 + rand.N(base/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func readError(res *http.Response) error {
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("customerapi: HTTP %d, reading the body: %w", res.StatusCode, err)
	}
	e := &Error{Body: body}
	if json.Unmarshal(body, e) != nil || e.Code == "" {
		e = &Error{Body: body}
	}
	e.StatusCode = res.StatusCode
	if e.RequestID == "" {
		e.RequestID = res.Header.Get("X-Request-Id")
	}
	e.Details = bytes.TrimSpace(e.Details)
	return e
}

// Ptr returns a pointer to v, for the optional fields of request bodies.
func Ptr[T any](v T) *T { return &v }
