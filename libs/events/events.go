// Package events defines the one envelope every event travels in, the Kafka topics and
// public event types of the platform, and the Kafka connection settings.
package events

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/propagation"

	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/telemetry"
)

// Kafka topics, one per producing bounded context. Keying every message by its subject
// (the aggregate ID) keeps the events of one aggregate in order on one partition.
const (
	TopicPages   = "pages.events"
	TopicPersons = "persons.events"
	TopicTopics  = "topics.events"
	TopicAssets  = "assets.events"
)

// Public event types: the ones delivered to webhook subscriptions.
const (
	TypePageVersionCreated   = "page.version.created"
	TypePageVersionProcessed = "page.version.processed"
	TypePageVersionPublished = "page.version.published"
	TypeFormSubmitted        = "form.submitted"
	TypeFormEnriched         = "form.enriched"
	TypeFormEnrichmentFailed = "form.enrichment_failed"
)

// Operational event types: the webhooks service announces them about the tenant's own
// subscriptions and deliveries, to the tenant's other subscriptions; no service
// publishes them on Kafka.
const (
	TypeWebhookSubscriptionDisabled = "webhook_subscription.disabled"
	TypeWebhookDeliveryFailed       = "webhook_delivery.failed"
)

// ProducedTypes lists the public event types the services publish on Kafka, in the
// spec's order: the ones the webhooks intake takes.
var ProducedTypes = []string{
	TypePageVersionCreated, TypePageVersionProcessed, TypePageVersionPublished,
	TypeFormSubmitted, TypeFormEnriched, TypeFormEnrichmentFailed,
}

// OperationalTypes lists the operational event types.
var OperationalTypes = []string{TypeWebhookSubscriptionDisabled, TypeWebhookDeliveryFailed}

// PublicTypes lists every event type delivered to webhook subscriptions: the produced
// ones, then the operational ones (the document's order).
var PublicTypes = append(slices.Clip(ProducedTypes), OperationalTypes...)

// IsOperational reports whether typ is an operational event type.
func IsOperational(typ string) bool { return slices.Contains(OperationalTypes, typ) }

// IsPublic reports whether typ is delivered to webhooks.
func IsPublic(typ string) bool { return slices.Contains(PublicTypes, typ) }

// Envelope is the shape of every event on Kafka.
type Envelope struct {
	// ID is unique per event (evt_…); consumers deduplicate on it and webhooks send it
	// as eventId.
	ID string `json:"id"`
	// Type is the event type, e.g. page.version.created.
	Type string `json:"type"`
	// TenantID is the tenant the event belongs to.
	TenantID string `json:"tenantId"`
	// Subject is the ID of the aggregate the event is about; it is the Kafka message key.
	Subject string `json:"subject"`
	// OccurredAt is when the change happened.
	OccurredAt time.Time `json:"occurredAt"`
	// Payload is the event-specific body.
	Payload json.RawMessage `json:"payload"`
}

// Announcement is an event as a use case decides it, before it has an ID and a time:
// its type, the ID it is about (the subject, its Kafka key) and its payload. The
// repository stores it in the outbox in the same transaction as the change.
type Announcement struct {
	Type    string
	Subject string
	Payload any
}

// Change is the one shape of a repository's read-modify-write update in every service:
// it changes the loaded record in place and returns the event that announces the change
// (the zero Announcement: none), whether anything changed (when not, nothing is stored or
// announced) and an error that aborts the update. The repository locks the row, calls it,
// and stores the row and the event in one transaction.
type Change[T any] func(cur *T) (Announcement, bool, error)

// New builds an envelope with a fresh ID and the current time.
func New(tenantID, typ, subject string, payload any) (Envelope, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return Envelope{}, fmt.Errorf("events: marshal %s payload: %w", typ, err)
	}
	return Envelope{
		ID: ids.New("evt"), Type: typ, TenantID: tenantID, Subject: subject,
		OccurredAt: time.Now().UTC(), Payload: b,
	}, nil
}

// Header names set on every Kafka message besides the trace context.
const (
	HeaderEventID   = "event-id"
	HeaderEventType = "event-type"
	HeaderTenantID  = "tenant-id"
)

// Headers returns the message headers of e, with the trace context of ctx.
func (e Envelope) Headers(ctx context.Context) map[string]string {
	h := map[string]string{HeaderEventID: e.ID, HeaderEventType: e.Type, HeaderTenantID: e.TenantID}
	telemetry.Propagator.Inject(ctx, propagation.MapCarrier(h))
	return h
}

// Decode reads the envelope of a Kafka message.
func Decode(m kafka.Message) (Envelope, error) {
	var e Envelope
	if err := json.Unmarshal(m.Value, &e); err != nil {
		return Envelope{}, fmt.Errorf("events: decode message at %s/%d/%d: %w", m.Topic, m.Partition, m.Offset, err)
	}
	if e.ID == "" || e.Type == "" {
		return Envelope{}, fmt.Errorf("events: message at %s/%d/%d has no event id or type", m.Topic, m.Partition, m.Offset)
	}
	return e, nil
}

// HeaderCarrier adapts Kafka message headers for trace-context propagation.
type HeaderCarrier struct{ Headers *[]kafka.Header }

// Get returns the first header named key.
func (c HeaderCarrier) Get(key string) string {
	for _, h := range *c.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// Set replaces or adds a header.
func (c HeaderCarrier) Set(key, value string) {
	for i, h := range *c.Headers {
		if h.Key == key {
			(*c.Headers)[i].Value = []byte(value)
			return
		}
	}
	*c.Headers = append(*c.Headers, kafka.Header{Key: key, Value: []byte(value)})
}

// Keys returns the header names.
func (c HeaderCarrier) Keys() []string {
	out := make([]string, len(*c.Headers))
	for i, h := range *c.Headers {
		out[i] = h.Key
	}
	return out
}

var _ propagation.TextMapCarrier = HeaderCarrier{}

// ContextFrom returns ctx carrying the trace context found in the message headers.
func ContextFrom(ctx context.Context, m *kafka.Message) context.Context {
	return telemetry.Propagator.Extract(ctx, HeaderCarrier{&m.Headers})
}
