package ports

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/services/webhooks/internal/app"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// Intake is the Kafka intake consumer's handler: it records each event's deliveries
// inside the consumer's transaction.
type Intake struct {
	App *app.Service
	// In binds the intake's repository to the consumer's transaction.
	In func(tx pgx.Tx) domain.EventRecorder
}

// Handle is the consumer's handler (consumer.Handler).
func (i *Intake) Handle(ctx context.Context, tx pgx.Tx, evt events.Envelope) error {
	return i.App.RecordEvent(ctx, i.In(tx), evt)
}
