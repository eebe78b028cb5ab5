package sender

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Each attempt is a span of its own, with what an operator looks for: the tenant, the
// subscription, delivery and event, the receiver's host (not its path, which may hold a
// secret), the status and the result; a failed attempt is an error span.
func TestEachAttemptIsASpan(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(500)
		}
	}))
	defer srv.Close()
	spans := tracetest.NewSpanRecorder()
	s := newSender(time.Second)
	defer s.Close()
	s.Tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("webhooks")
	ok := job(t, srv.URL+"/ok?token=secret")
	ok.TenantID, ok.SubscriptionID, ok.DeliveryID, ok.AttemptNo = "acme", "whsub_1", "whdel_1", 2
	s.Send(context.Background(), ok)
	s.Send(context.Background(), job(t, srv.URL+"/fail"))
	ended := spans.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans for 2 attempts", len(ended))
	}
	attrs := map[string]string{}
	for _, a := range ended[0].Attributes() {
		attrs[string(a.Key)] = a.Value.String()
	}
	for k, want := range map[string]string{"tenant_id": "acme", "webhook.subscription_id": "whsub_1",
		"webhook.delivery_id": "whdel_1", "webhook.event_id": "evt_1", "webhook.attempt": "2",
		"server.address": "127.0.0.1", "http.response.status_code": "200", "webhook.result": "success"} {
		if attrs[k] != want {
			t.Errorf("%s = %q, want %q (%v)", k, attrs[k], want, attrs)
		}
	}
	if ended[0].Name() != SpanAttempt || ended[0].Status().Code == codes.Error {
		t.Errorf("successful attempt span %q status %v", ended[0].Name(), ended[0].Status())
	}
	if ended[1].Status().Code != codes.Error {
		t.Errorf("failed attempt span status %v, want error", ended[1].Status())
	}
}
