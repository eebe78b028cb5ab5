package domain

import (
	"context"
	"net/url"

	"github.com/customerapi/platform/libs/events"
)

// Repository is what the use cases need from storage.
type Repository interface {
	CreateSubscription(ctx context.Context, s Subscription) error
	GetSubscription(ctx context.Context, tenantID, id string) (Subscription, error)
	ListSubscriptions(ctx context.Context, tenantID, after string, limit int) ([]Subscription, int64, error)
	UpdateSubscription(ctx context.Context, tenantID, id string, fn func(*Subscription) bool) (Subscription, error)
	DeleteSubscription(ctx context.Context, tenantID, id string) error
	ListDeliveries(ctx context.Context, tenantID, subscriptionID string, f DeliveryFilter, limit int) ([]Delivery, int64, error)
	GetDelivery(ctx context.Context, tenantID, subscriptionID, deliveryID string) (Delivery, error)
	RetryDelivery(ctx context.Context, tenantID, subscriptionID, deliveryID string) (Delivery, error)
	// RecordTestDelivery queues a test event's delivery to one subscription.
	RecordTestDelivery(ctx context.Context, tenantID, subscriptionID, deliveryID, eventID, eventType string, body []byte) (Delivery, error)
	EventRepository
}

// URLChecker checks a target URL against the SSRF policy (adapters/ssrf.Guard is one): a
// refused URL gives a *RefusedError.
type URLChecker interface {
	CheckURL(ctx context.Context, u *url.URL) error
}

// EventRecorder records the deliveries of an incoming event (the intake), in the
// transaction it is bound to.
type EventRecorder interface {
	// RecordEvent records one pending delivery of evt per active subscription of its
	// tenant that lists its type, once however often evt arrives, and returns the number
	// of deliveries added.
	RecordEvent(ctx context.Context, evt events.Envelope) (int64, error)
}
