package adapters

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// RecordTestDelivery queues one delivery of a test event for one subscription, the way
// the intake queues a real event (pending, due now, the workers woken when it commits)
// but marked as a test (Job.Test), and returns it. The subscription must be active.
func (s *Store) RecordTestDelivery(ctx context.Context, tenantID, subscriptionID, deliveryID, eventID, eventType string, body []byte) (domain.Delivery, error) {
	var out domain.Delivery
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		// Locked against a concurrent deactivation, which would miss this delivery.
		sub, err := getSubscription(ctx, tx, s.secrets, tenantID, subscriptionID, "FOR SHARE")
		if err != nil {
			return err
		}
		if !sub.Active {
			return domain.ErrSubscriptionInactive
		}
		if _, err := tx.Exec(ctx, `INSERT INTO deliveries (tenant_id, delivery_id, subscription_id, event_id, event_type,
				ordering_key, body, test, status, next_attempt_at, created_at, updated_at)
			SELECT $1, $2, $3, $4, $5, $4, $6, true, 'pending', n.now, n.now, n.now
			FROM (SELECT date_trunc('milliseconds', now()) AS now) AS n`,
			tenantID, deliveryID, subscriptionID, eventID, eventType, body); err != nil {
			return fmt.Errorf("insert test delivery: %w", err)
		}
		if out, err = getDelivery(ctx, tx, tenantID, subscriptionID, deliveryID, ""); err != nil {
			return err
		}
		return notify(ctx, tx, tenantID, *out.NextAttemptAt)
	})
	return out, err
}
