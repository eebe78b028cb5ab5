package domain

import (
	"time"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/timestamp"
)

// Operational events tell a tenant about its own webhooks, through its other
// subscriptions: a subscription the platform disabled, a delivery that failed for good.
// They are recorded, matched and delivered like every other event, in the transaction
// that changes the state they announce.

// SubscriptionDisabled is the payload of webhook_subscription.disabled
// (WebhookSubscriptionDisabledEventPayload).
type SubscriptionDisabled struct {
	Type           string `json:"type"`
	SubscriptionID string `json:"subscriptionId"`
	URL            string `json:"url"`
	Reason         string `json:"reason"`
	DisabledAt     string `json:"disabledAt"`
}

// DeliveryFailed is the payload of webhook_delivery.failed
// (WebhookDeliveryFailedEventPayload).
type DeliveryFailed struct {
	Type           string  `json:"type"`
	DeliveryID     string  `json:"deliveryId"`
	SubscriptionID string  `json:"subscriptionId"`
	EventID        string  `json:"eventId"`
	EventType      string  `json:"eventType"`
	AttemptsCount  int     `json:"attemptsCount"`
	LastStatusCode *int    `json:"lastStatusCode"`
	LastError      *string `json:"lastError"`
	FailedAt       string  `json:"failedAt"`
}

// SubscriptionDisabledEvent announces that the platform disabled a subscription (its
// subject) at the given time for the given reason.
func SubscriptionDisabledEvent(tenantID, subscriptionID, url, reason string, at time.Time) (events.Envelope, error) {
	return events.New(tenantID, events.TypeWebhookSubscriptionDisabled, subscriptionID, SubscriptionDisabled{
		Type: events.TypeWebhookSubscriptionDisabled, SubscriptionID: subscriptionID, URL: url, Reason: reason,
		DisabledAt: timestamp.Format(at),
	})
}

// AnnouncesFailure reports whether a delivery of an event of this type that fails for
// good is announced: not a test event's, and not an operational event's, so that a
// receiver failing its operational deliveries starts no chain of announcements.
func AnnouncesFailure(eventType string, test bool) bool {
	return !test && !events.IsOperational(eventType)
}

// DeliveryFailedEvent announces that a delivery (its subject) failed for good after
// attempts attempts, the last one's outcome being last.
func DeliveryFailedEvent(tenantID string, d Delivery, attempts int, last Attempt, at time.Time) (events.Envelope, error) {
	return events.New(tenantID, events.TypeWebhookDeliveryFailed, d.ID, DeliveryFailed{
		Type: events.TypeWebhookDeliveryFailed, DeliveryID: d.ID, SubscriptionID: d.SubscriptionID,
		EventID: d.EventID, EventType: d.EventType, AttemptsCount: attempts,
		LastStatusCode: last.StatusCode, LastError: last.Error, FailedAt: timestamp.Format(at),
	})
}
