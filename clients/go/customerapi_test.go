package customerapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	customerapi "github.com/customerapi/platform/clients/go"
)

const envelope404 = `{"type":"http://x/errors/not_found","title":"Not Found","status":404,"code":"NOT_FOUND","detail":"page not found","requestId":"req_1"}`

func TestAPIKeyRetriesAndTypedErrors(t *testing.T) {
	var calls atomic.Int32
	var keys []string // the Idempotency-Key of each POST
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if r.Method == http.MethodPost {
			keys = append(keys, r.Header.Get("Idempotency-Key"))
		}
		if r.Header.Get("x-api-key") != "k1" {
			w.WriteHeader(401)
			return
		}
		switch r.URL.Path {
		case "/v0/topics":
			body, _ := io.ReadAll(r.Body)
			if n == 1 { // the first try is rate limited
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(429)
				return
			}
			if string(body) != `{"purpose":null,"title":"Pricing"}` {
				t.Errorf("retried body = %q", body)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			_, _ = io.WriteString(w, `{"topicId":"topic_1","title":"Pricing","createdAt":"2026-01-02T03:04:05.678Z","updatedAt":"2026-01-02T03:04:05.678Z"}`)
		case "/v0/pages/page_1":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(404)
			_, _ = io.WriteString(w, envelope404)
		case "/v0/pages": // a POST carries an Idempotency-Key: its 503 is retried
			if n == 1 {
				w.WriteHeader(503)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			_, _ = io.WriteString(w, `{}`)
		case "/v0/pages/page_2":
			w.WriteHeader(503) // a PATCH without Retry-After may have been done: not retried
		}
	}))
	defer srv.Close()
	c, err := customerapi.New(srv.URL, "k1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := c.CreateTopicWithResponse(ctx, nil, customerapi.TopicCreate{Title: "Pricing"})
	if err != nil || r.JSON201 == nil || r.JSON201.TopicId != "topic_1" || calls.Load() != 2 {
		t.Fatalf("create after a 429: %v, %+v, %d calls", err, r, calls.Load())
	}

	_, err = c.GetPageWithResponse(ctx, "page_1")
	var apiErr *customerapi.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "NOT_FOUND" || apiErr.RequestID != "req_1" ||
		apiErr.Detail != "page not found" || !customerapi.IsNotFound(err) {
		t.Fatalf("404: %#v", err)
	}

	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("a POST and its retry must carry one Idempotency-Key: %q", keys)
	}

	calls.Store(0)
	keys = nil
	if _, err = c.CreatePageWithResponse(ctx, nil, customerapi.PageCreate{}); err != nil || calls.Load() != 2 {
		t.Fatalf("a POST's 503 without Retry-After, with its Idempotency-Key: %v after %d calls", err, calls.Load())
	}
	if len(keys) != 2 || keys[0] != keys[1] || len(keys[0]) != 36 {
		t.Fatalf("the retried POST must resend its Idempotency-Key (a UUID): %q", keys)
	}
	calls.Store(0)
	_, err = c.UpdatePageWithResponse(ctx, "page_2", customerapi.PageUpdate{})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || calls.Load() != 1 {
		t.Fatalf("503 of a PATCH: %v after %d calls", err, calls.Load())
	}
}

// A 401 tells its reason (details.reason) through Error.UnauthorizedReason; other errors,
// and a 401 without details, have none.
func TestUnauthorizedReason(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.Header.Get("x-api-key") {
		case "wrong":
			w.WriteHeader(401)
			_, _ = io.WriteString(w, `{"type":"http://x/errors/unauthorized","title":"Unauthorized","status":401,"code":"UNAUTHORIZED",`+
				`"detail":"authentication is required","requestId":"req_2","details":{"reason":"unknown_key","hint":"use a key issued for your tenant"}}`)
		case "bare":
			w.WriteHeader(401)
			_, _ = io.WriteString(w, `{"type":"http://x/errors/unauthorized","title":"Unauthorized","status":401,"code":"UNAUTHORIZED",`+
				`"detail":"authentication is required","requestId":"req_3"}`)
		default:
			w.WriteHeader(404)
			_, _ = io.WriteString(w, envelope404)
		}
	}))
	defer srv.Close()
	for key, want := range map[string]customerapi.UnauthorizedDetailsReason{"wrong": customerapi.UnknownKey, "bare": "", "k": ""} {
		c, err := customerapi.New(srv.URL, key)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.GetPageWithResponse(context.Background(), "page_1")
		var apiErr *customerapi.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("key %q: %v is not an *Error", key, err)
		}
		if got := apiErr.UnauthorizedReason(); got != want {
			t.Errorf("key %q: UnauthorizedReason() = %q, want %q", key, got, want)
		}
	}
}

func TestRetryAfterIsHonouredAndBounded(t *testing.T) {
	var calls, after atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", strconv.Itoa(int(after.Load())))
		w.WriteHeader(503)
	}))
	defer srv.Close()
	c, _ := customerapi.New(srv.URL, "k", customerapi.WithRetries(2, 1500*time.Millisecond))
	after.Store(1)
	start := time.Now()
	_, err := c.ListTopicsWithResponse(context.Background(), nil)
	if took := time.Since(start); err == nil || calls.Load() != 3 || took < 2*time.Second {
		t.Fatalf("two retries after 1 s each: %v, %d calls in %s", err, calls.Load(), took)
	}
	calls.Store(0)
	after.Store(60)
	_, err = c.ListTopicsWithResponse(context.Background(), nil)
	if err == nil || calls.Load() != 1 {
		t.Fatalf("a Retry-After beyond the bound is not waited for: %v, %d calls", err, calls.Load())
	}
}

func TestAllWalksEveryPage(t *testing.T) {
	pages := map[string]struct {
		items []int
		next  *string
	}{"": {[]int{1, 2}, new("b")}, "b": {[]int{3, 4}, new("c")}, "c": {[]int{5}, nil}}
	var got []int
	for it, err := range customerapi.All(context.Background(), func(_ context.Context, cursor *string) ([]int, *string, error) {
		k := ""
		if cursor != nil {
			k = *cursor
		}
		p := pages[k]
		return p.items, p.next, nil
	}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, it)
	}
	if len(got) != 5 || got[4] != 5 {
		t.Fatalf("got %v", got)
	}
	boom := errors.New("boom")
	for _, err := range customerapi.All(context.Background(), func(context.Context, *string) ([]int, *string, error) { return nil, nil, boom }) {
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
	}
}

// IfNoneMatch and IfMatch send the conditional headers; a 304 and a 412 are *Errors that
// IsNotModified and IsPreconditionFailed recognise, neither retried.
func TestConditionalHelpers(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("ETag", `"v2"`)
		switch {
		case r.Header.Get("If-None-Match") == `"v2"`:
			w.WriteHeader(http.StatusNotModified)
		case r.Header.Get("If-Match") != "" && r.Header.Get("If-Match") != `"v2"`:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusPreconditionFailed)
			_, _ = io.WriteString(w, `{"code":"PRECONDITION_FAILED","status":412,"detail":"changed","requestId":"r","title":"Precondition Failed","type":"t"}`)
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL)
		}
	}))
	defer srv.Close()
	c, err := customerapi.New(srv.URL, "k")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.GetTopicWithResponse(ctx, "topic_1", customerapi.IfNoneMatch(`"v2"`)); !customerapi.IsNotModified(err) {
		t.Fatalf("If-None-Match of the current version: want a 304, got %v", err)
	}
	_, err = c.UpdateTopicWithResponse(ctx, "topic_1", customerapi.TopicUpdate{}, customerapi.IfMatch(`"v1"`))
	if !customerapi.IsPreconditionFailed(err) || customerapi.IsNotModified(err) || calls.Load() != 2 {
		t.Fatalf("If-Match of an old version: want one 412, got %v after %d calls", err, calls.Load())
	}
}
