package adapters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

const eventCols = "event_id, event_type, subject, occurred_at, body"

func scanEvent(r pgx.Row) (domain.Event, error) {
	var e domain.Event
	err := r.Scan(&e.ID, &e.Type, &e.Subject, &e.OccurredAt, &e.Body)
	return e, err
}

// recordEvent keeps an event for the events API, once however often it arrives.
func recordEvent(ctx context.Context, tx pgx.Tx, tenantID, eventID, eventType, subject string, occurredAt time.Time, body []byte) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO events (tenant_id, event_id, event_type, subject, occurred_at, body)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, event_id) DO NOTHING`,
		tenantID, eventID, eventType, subject, occurredAt, body)
	if err != nil {
		return fmt.Errorf("record event: %w", err)
	}
	return nil
}

// ListEvents returns up to limit of the tenant's events that match f, newest first.
func (s *Store) ListEvents(ctx context.Context, tenantID string, f domain.EventFilter, limit int) ([]domain.Event, error) {
	before := f.Before
	if before == "" {
		before = "\U0010FFFF"
	}
	rows, err := s.pool.Query(ctx, "SELECT "+eventCols+` FROM events
		WHERE tenant_id = $1 AND event_id < $2
		  AND ($3 = '' OR event_type = $3) AND ($4 = '' OR subject = $4)
		  AND ($5::timestamptz IS NULL OR occurred_at >= $5) AND ($6::timestamptz IS NULL OR occurred_at < $6)
		ORDER BY event_id DESC LIMIT $7`, tenantID, before, f.Type, f.Subject, f.Since, f.Until, limit)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Event, error) { return scanEvent(r) })
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return out, nil
}

// GetEvent returns one of the tenant's events.
func (s *Store) GetEvent(ctx context.Context, tenantID, eventID string) (domain.Event, error) {
	e, err := scanEvent(s.pool.QueryRow(ctx, "SELECT "+eventCols+" FROM events WHERE tenant_id = $1 AND event_id = $2", tenantID, eventID))
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Event{}, domain.ErrEventNotFound
	}
	if err != nil {
		return domain.Event{}, fmt.Errorf("get event: %w", err)
	}
	return e, nil
}

// replaySQL queues the deliveries of the events $4 (IDs) to subscription $2 with the new
// delivery IDs $3 (same order): an event without a delivery gets one; an ended one
// (succeeded, failed) is made due now with a fresh retry schedule; a pending one stays.
// It returns how many it queued.
const replaySQL = `
WITH n AS (SELECT date_trunc('milliseconds', now()) AS now),
q AS (
	INSERT INTO deliveries AS d (tenant_id, delivery_id, subscription_id, event_id, event_type, ordering_key, body,
	                             status, next_attempt_at, created_at, updated_at)
	SELECT $1, r.delivery_id, $2, e.event_id, e.event_type, e.subject, e.body, 'pending', n.now, n.now, n.now
	FROM unnest($3::text[], $4::text[]) AS r(delivery_id, event_id)
	JOIN events e ON e.tenant_id = $1 AND e.event_id = r.event_id
	CROSS JOIN n
	ON CONFLICT (tenant_id, subscription_id, event_id) DO UPDATE
	   SET status = 'pending', next_attempt_at = EXCLUDED.next_attempt_at, retry_step = 0, updated_at = EXCLUDED.updated_at
	   WHERE d.status <> 'pending'
	RETURNING 1)
SELECT count(*) FROM q`

// ReplayEvents queues the deliveries of a replay (domain.EventRepository).
func (s *Store) ReplayEvents(ctx context.Context, tenantID, subscriptionID string, r domain.Replay, deliveryIDs []string) (domain.ReplayResult, error) {
	var out domain.ReplayResult
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		// Locked against a concurrent deactivation, which would miss these deliveries.
		sub, err := getSubscription(ctx, tx, s.secrets, tenantID, subscriptionID, "FOR UPDATE")
		if err != nil {
			return err
		}
		if !sub.Active {
			return domain.ErrSubscriptionInactive
		}
		tag, err := tx.Exec(ctx, `UPDATE subscriptions SET last_replay_at = now()
			WHERE tenant_id = $1 AND subscription_id = $2
			  AND (last_replay_at IS NULL OR last_replay_at <= now() - $3::float8 * interval '1 second')`,
			tenantID, subscriptionID, domain.ReplayInterval.Seconds())
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return domain.ErrReplayTooSoon
		}
		since := r.Since
		if since.Before(sub.CreatedAt) {
			since = sub.CreatedAt // it would not have received what came before it
		}
		rows, err := tx.Query(ctx, `SELECT event_id, occurred_at FROM events
			WHERE tenant_id = $1 AND occurred_at >= $2 AND occurred_at < $3
			  AND ($4::text[] IS NULL OR event_type = ANY($4)) AND ($5::text[] IS NULL OR event_type = ANY($5))
			ORDER BY occurred_at, event_id LIMIT $6`,
			tenantID, since, r.Until, sub.Events, r.Types, len(deliveryIDs)+1)
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		var eventIDs []string
		var times []time.Time
		for rows.Next() {
			var id string
			var at time.Time
			if err := rows.Scan(&id, &at); err != nil {
				rows.Close()
				return fmt.Errorf("replay: %w", err)
			}
			eventIDs, times = append(eventIDs, id), append(times, at)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		if len(eventIDs) > len(deliveryIDs) {
			out.NextSince = &times[len(deliveryIDs)]
			eventIDs = eventIDs[:len(deliveryIDs)]
		}
		if len(eventIDs) == 0 {
			return nil
		}
		if err := tx.QueryRow(ctx, replaySQL, tenantID, subscriptionID, deliveryIDs[:len(eventIDs)], eventIDs).Scan(&out.Queued); err != nil {
			return fmt.Errorf("replay: queue deliveries: %w", err)
		}
		out.AlreadyPending = len(eventIDs) - out.Queued
		return notify(ctx, tx, tenantID, time.Now())
	})
	return out, err
}
