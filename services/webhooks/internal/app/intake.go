package app

import (
	"context"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// RecordEvent is the intake: it records the deliveries of evt to the subscriptions of its
// tenant that list its type, through in, bound to the intake consumer's transaction (the
// event counts as processed only with its deliveries).
func (s *Service) RecordEvent(ctx context.Context, in domain.EventRecorder, evt events.Envelope) error {
	_, err := in.RecordEvent(ctx, evt)
	return err
}
