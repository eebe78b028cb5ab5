// Package sender makes the delivery engine's attempts: signed HTTP requests to the
// receivers, through the SSRF guard (domain.Sender).
package sender

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/ssrf"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
	"github.com/customerapi/platform/services/webhooks/internal/domain/signing"
)

// Limits of what an attempt reads and records.
const (
	// SnippetBytes is how much of an answer's body an attempt records.
	SnippetBytes = 512
	// drainBytes is how much of an answer is read at most: reading a short body to the
	// end lets the connection be reused; a longer one is cut off with its connection.
	drainBytes  = 64 << 10
	maxErrorLen = 500
)

// UserAgent identifies the sender to receivers.
const UserAgent = "CustomerAPI-Webhooks/0.0.1"

// Sender makes the HTTP attempts: pooled keep-alive connections through the SSRF guard,
// no proxy, no redirects, a total timeout, capped reads.
type Sender struct {
	client  *http.Client
	timeout time.Duration
	now     func() time.Time
	// Tracer, optional, makes a span of each attempt (SpanAttempt).
	Tracer trace.Tracer
	// Log, optional, records which address a refused attempt's host resolved to.
	Log *slog.Logger
}

// New returns a Sender whose connections go through guard; maxConnsPerHost bounds
// the idle connections kept per receiver host.
func New(guard *ssrf.Guard, timeout time.Duration, maxConnsPerHost int) *Sender {
	transport := &http.Transport{
		Proxy:                  nil, // a proxy would dial instead of the guard
		DialContext:            guard.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           4096,
		MaxIdleConnsPerHost:    maxConnsPerHost,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		DisableCompression:     true,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &Sender{
		client: &http.Client{
			Transport: transport,
			Timeout:   timeout,
			// A redirect is an answer like any other non-2xx: the target must be the URL
			// that was checked.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		timeout: timeout,
		now:     time.Now,
	}
}

// Close drops the idle connections.
func (s *Sender) Close() { s.client.CloseIdleConnections() }

// SpanAttempt is the name of an attempt's span: a client span with the tenant, the
// subscription, delivery, event and attempt number, the receiver's host, the answer's
// status code and the attempt's result; an attempt that failed has the span's error status.
const SpanAttempt = "webhook attempt"

// Send makes one attempt of job, signed at the moment it is sent, in a span of its own.
func (s *Sender) Send(ctx context.Context, job domain.Job) (domain.Attempt, domain.Outcome) {
	if s.Tracer == nil {
		return s.send(ctx, job)
	}
	host := ""
	if u, err := url.Parse(job.URL); err == nil {
		host = u.Hostname() // never the path or query, which may hold a receiver's secret
	}
	ctx, span := s.Tracer.Start(ctx, SpanAttempt, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("tenant_id", job.TenantID),
			attribute.String("webhook.subscription_id", job.SubscriptionID),
			attribute.String("webhook.delivery_id", job.DeliveryID),
			attribute.String("webhook.event_id", job.EventID),
			attribute.Int("webhook.attempt", job.AttemptNo),
			attribute.String("http.request.method", http.MethodPost),
			attribute.String("server.address", host)))
	defer span.End()
	att, out := s.send(ctx, job)
	span.SetAttributes(attribute.String("webhook.result", out.Result))
	if att.StatusCode != nil {
		span.SetAttributes(attribute.Int("http.response.status_code", *att.StatusCode))
	}
	if !out.Success {
		msg := out.Result
		if att.Error != nil {
			msg = *att.Error
		}
		span.SetStatus(codes.Error, msg)
	}
	return att, out
}

// send makes the attempt.
func (s *Sender) send(ctx context.Context, job domain.Job) (domain.Attempt, domain.Outcome) {
	start := s.now()
	att := domain.Attempt{AttemptedAt: timestamp.Truncate(start)}
	fail := func(result, msg string) (domain.Attempt, domain.Outcome) {
		att.DurationMs = s.now().Sub(start).Milliseconds()
		msg = truncate(msg, maxErrorLen)
		att.Error = &msg
		return att, domain.Outcome{Result: result}
	}
	keys, err := keysOf(job)
	if err != nil {
		return fail("network_error", err.Error())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, job.URL, bytes.NewReader(job.Body))
	if err != nil {
		return fail("network_error", "invalid request: "+err.Error())
	}
	req.Header = make(http.Header, 10)
	req.Header["Content-Type"] = []string{"application/json"}
	req.Header["User-Agent"] = []string{UserAgent}
	if job.Test {
		req.Header[domain.TestHeader] = []string{"true"}
	}
	signing.Sign(req.Header, keys, job.EventID, job.Body, start)
	resp, err := s.client.Do(req)
	if err != nil {
		s.logRefusal(ctx, job, err)
		return fail(classifyError(err, s.timeout))
	}
	snippet := readBody(resp.Body)
	resp.Body.Close()
	att.DurationMs = s.now().Sub(start).Milliseconds()
	code := resp.StatusCode
	att.StatusCode = &code
	if snippet != "" {
		att.ResponseSnippet = &snippet
	}
	out := domain.Outcome{Result: "http_error"}
	var msg string
	switch {
	case code >= 200 && code < 300:
		// The status decides; a body cut short or too long does not undo it.
		return att, domain.Outcome{Result: "success", Success: true}
	case code >= 300 && code < 400:
		msg = fmt.Sprintf("redirect not followed (status %d)", code)
	case code == http.StatusGone:
		msg = "receiver answered 410 Gone: the subscription is disabled"
		out.Gone = true
	default:
		msg = fmt.Sprintf("receiver answered %d %s", code, http.StatusText(code))
		if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
			out.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), start)
		}
	}
	att.Error = &msg
	return att, out
}

// logRefusal records in the operator's log which address a refused attempt's host
// resolved to; the attempt the tenant reads says only that it was refused.
func (s *Sender) logRefusal(ctx context.Context, job domain.Job, err error) {
	var refused *domain.RefusedError
	if s.Log == nil || !errors.As(err, &refused) {
		return
	}
	s.Log.WarnContext(ctx, "webhook attempt refused by the SSRF guard", slog.String("tenant_id", job.TenantID),
		slog.String("subscription_id", job.SubscriptionID), slog.String("delivery_id", job.DeliveryID),
		slog.String("detail", refused.Detail()))
}

func keysOf(job domain.Job) (signing.Keys, error) {
	if job.Secret == "" { // the store could not open it (adapters.Store.Claim)
		return signing.Keys{}, errors.New("signing secret unavailable; the delivery will be retried")
	}
	cur, err := signing.ParseKey(job.Secret)
	if err != nil {
		return signing.Keys{}, fmt.Errorf("signing secret unusable: %w", err)
	}
	keys := signing.Keys{Current: cur}
	if job.PreviousSecret != nil {
		if prev, err := signing.ParseKey(*job.PreviousSecret); err == nil {
			keys.Previous = &prev
		}
	}
	return keys, nil
}

// readBody reads up to drainBytes of an answer (so the connection can be reused) and
// returns its first SnippetBytes as valid UTF-8 text without NUL bytes, which
// PostgreSQL text cannot hold. A read error only shortens the snippet.
func readBody(r io.Reader) string {
	buf, _ := io.ReadAll(io.LimitReader(r, drainBytes))
	if len(buf) > SnippetBytes {
		buf = buf[:SnippetBytes]
		// Drop a character cut in half at the end.
		for i := 0; i < utf8.UTFMax-1 && len(buf) > 0; i++ {
			if r, size := utf8.DecodeLastRune(buf); r != utf8.RuneError || size != 1 {
				break
			}
			buf = buf[:len(buf)-1]
		}
	}
	s := strings.ToValidUTF8(string(buf), "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "")
}

// classifyError turns a transport error into a metrics label and the recorded message.
func classifyError(err error, timeout time.Duration) (string, string) {
	var refused *domain.RefusedError
	if errors.As(err, &refused) {
		return "refused", refused.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return "timeout", fmt.Sprintf("no answer within %s", timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // without the method and URL, which the delivery already shows
	}
	return "network_error", err.Error()
}

// parseRetryAfter reads a Retry-After header: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, 1<<31)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.RuneStart(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return strings.ToValidUTF8(s, "") + "…"
}
