package events

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	e, err := New("acme", TypeFormSubmitted, "sub_1", map[string]string{"type": TypeFormSubmitted})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(e.ID, "evt_") || e.OccurredAt.IsZero() {
		t.Fatalf("envelope = %+v", e)
	}
	b, _ := json.Marshal(e)
	got, err := Decode(kafka.Message{Value: b})
	if err != nil || got.ID != e.ID || got.Type != e.Type || string(got.Payload) != string(e.Payload) {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	for _, bad := range []string{`not json`, `{}`, `{"id":"evt_1"}`} {
		if _, err := Decode(kafka.Message{Value: []byte(bad)}); err == nil {
			t.Errorf("Decode(%s) accepted", bad)
		}
	}
}

func TestTraceContextTravelsInHeaders(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	e, _ := New("acme", "x", "s", nil)
	h := e.Headers(ctx)
	if h[HeaderEventID] != e.ID || h[HeaderTenantID] != "acme" || h["traceparent"] == "" {
		t.Fatalf("headers = %v", h)
	}
	m := kafka.Message{}
	for k, v := range h {
		HeaderCarrier{&m.Headers}.Set(k, v)
	}
	got := trace.SpanContextFromContext(ContextFrom(context.Background(), &m))
	if got.TraceID() != sc.TraceID() {
		t.Fatalf("trace ID %s, want %s", got.TraceID(), sc.TraceID())
	}
}

func TestPublicTypes(t *testing.T) {
	if len(ProducedTypes) != 6 || len(PublicTypes) != 8 || !IsPublic(TypePageVersionCreated) || IsPublic("topic.created") {
		t.Fatal("public types: the spec's six produced ones and the two operational ones")
	}
	if !IsPublic(TypeWebhookDeliveryFailed) || !IsOperational(TypeWebhookSubscriptionDisabled) || IsOperational(TypeFormSubmitted) {
		t.Fatal("operational types are public, and only they are operational")
	}
}
