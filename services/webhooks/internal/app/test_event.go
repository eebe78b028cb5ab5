package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
	"github.com/customerapi/platform/services/webhooks/internal/testevent"
)

// ErrUnknownEventType reports a test event type the document has no payload for.
var ErrUnknownEventType = errors.New("unknown event type")

// SendTestEvent queues a new event of eventType for one subscription, whose payload is
// the document's example with fake IDs (testevent.Payload) and whose body says "test":
// true; the delivery engine sends it like any other, with the X-Webhook-Test header.
func (s *Service) SendTestEvent(ctx context.Context, tenantID, subscriptionID, eventType string) (domain.Delivery, error) {
	payload, ok, err := testevent.Payload(eventType)
	if err != nil {
		return domain.Delivery{}, err
	}
	if !ok {
		return domain.Delivery{}, fmt.Errorf("%w %q", ErrUnknownEventType, eventType)
	}
	evt := events.Envelope{ID: ids.New("evt"), Type: eventType, TenantID: tenantID, OccurredAt: s.Clock.Now(), Payload: payload}
	body, err := domain.NewTestBody(evt)
	if err != nil {
		return domain.Delivery{}, err
	}
	return s.Repo.RecordTestDelivery(ctx, tenantID, subscriptionID, ids.New("delivery"), evt.ID, eventType, body)
}
