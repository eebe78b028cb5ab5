package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// ErrUnknownEventType reports a test event type the document has no payload for.
var ErrUnknownEventType = errors.New("unknown event type")

// SendTestEvent queues a new event of eventType for one subscription, whose payload is
// the document's example with fake IDs (domain.TestPayload) and whose body says "test":
// true; the delivery engine sends it like any other, with the X-Webhook-Test header.
func (s *Service) SendTestEvent(ctx context.Context, tenantID, subscriptionID, eventType string) (domain.Delivery, error) {
	example, ok, err := s.Types.Example(eventType)
	if err != nil {
		return domain.Delivery{}, err
	}
	if !ok {
		return domain.Delivery{}, fmt.Errorf("%w %q", ErrUnknownEventType, eventType)
	}
	payload, err := domain.TestPayload(eventType, example)
	if err != nil {
		return domain.Delivery{}, err
	}
	evt := events.Envelope{ID: ids.New("evt"), Type: eventType, TenantID: tenantID, OccurredAt: s.Clock.Now(), Payload: payload}
	body, err := domain.NewTestBody(evt)
	if err != nil {
		return domain.Delivery{}, err
	}
	return s.Repo.RecordTestDelivery(ctx, tenantID, subscriptionID, ids.New("delivery"), evt.ID, eventType, body)
}

// PayloadSchemas returns the payload schema of every event type of the API document.
func (s *Service) PayloadSchemas() (map[string]domain.PayloadSchema, error) {
	return s.Types.PayloadSchemas()
}
