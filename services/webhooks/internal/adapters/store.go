// Package adapters stores the webhooks context in PostgreSQL: subscriptions, and the
// deliveries queue with its attempts (queue.go).
package adapters

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/secretbox"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// Store is the webhooks repository. Signing secrets are sealed with secrets before they
// are written and opened when read (secrets.go).
type Store struct {
	pool    *pgxpool.Pool
	secrets *secretbox.Keyring
}

// NewStore returns a Store on pool that seals signing secrets with secrets.
func NewStore(pool *pgxpool.Pool, secrets *secretbox.Keyring) *Store {
	return &Store{pool: pool, secrets: secrets}
}

const subscriptionCols = `subscription_id, tenant_id, url, events, active, secret, previous_secret,
	previous_secret_until, disabled_reason, disabled_at, created_at, updated_at`

// scanSubscription reads a subscription and opens its secrets.
func scanSubscription(r pgx.Row, keys *secretbox.Keyring) (domain.Subscription, error) {
	var s domain.Subscription
	if err := r.Scan(&s.ID, &s.TenantID, &s.URL, &s.Events, &s.Active, &s.Secret, &s.PreviousSecret,
		&s.PreviousSecretUntil, &s.DisabledReason, &s.DisabledAt, &s.CreatedAt, &s.UpdatedAt); err != nil {
		return s, err
	}
	return s, openSecrets(keys, &s)
}

// CreateSubscription stores a new subscription, within the per-tenant limit.
func (s *Store) CreateSubscription(ctx context.Context, sub domain.Subscription) error {
	return postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		// Creates of one tenant count one after another. The count is a statement of its
		// own, so that its snapshot sees what committed while the lock was awaited.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('webhook-subscriptions:' || $1, 0))",
			sub.TenantID); err != nil {
			return fmt.Errorf("lock subscriptions: %w", err)
		}
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM subscriptions WHERE tenant_id = $1", sub.TenantID).Scan(&n); err != nil {
			return fmt.Errorf("count subscriptions: %w", err)
		}
		if n >= domain.MaxSubscriptionsPerTenant {
			return domain.ErrTooManySubscriptions
		}
		secret, previous := sealSecrets(s.secrets, sub)
		_, err := tx.Exec(ctx, "INSERT INTO subscriptions ("+subscriptionCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			sub.ID, sub.TenantID, sub.URL, sub.Events, sub.Active, secret, previous,
			sub.PreviousSecretUntil, sub.DisabledReason, sub.DisabledAt, sub.CreatedAt, sub.UpdatedAt)
		if err != nil {
			return fmt.Errorf("insert subscription: %w", err)
		}
		return nil
	})
}

// GetSubscription returns one subscription of a tenant.
func (s *Store) GetSubscription(ctx context.Context, tenantID, id string) (domain.Subscription, error) {
	return getSubscription(ctx, s.pool, s.secrets, tenantID, id, "")
}

func getSubscription(ctx context.Context, q postgres.Conn, keys *secretbox.Keyring, tenantID, id, lock string) (domain.Subscription, error) {
	sub, err := scanSubscription(q.QueryRow(ctx, "SELECT "+subscriptionCols+
		" FROM subscriptions WHERE tenant_id = $1 AND subscription_id = $2 "+lock, tenantID, id), keys)
	if postgres.IsNoRows(err) {
		return domain.Subscription{}, domain.ErrSubscriptionNotFound
	}
	if err != nil {
		return domain.Subscription{}, fmt.Errorf("get subscription: %w", err)
	}
	return sub, nil
}

// ListSubscriptions returns up to limit subscriptions of a tenant in creation order,
// after the given ID ("" for the first page), and the tenant's subscription count.
func (s *Store) ListSubscriptions(ctx context.Context, tenantID, after string, limit int) ([]domain.Subscription, int64, error) {
	b := &pgx.Batch{}
	b.Queue("SELECT "+subscriptionCols+` FROM subscriptions WHERE tenant_id = $1 AND subscription_id > $2
		ORDER BY subscription_id LIMIT $3`, tenantID, after, limit)
	b.Queue("SELECT count(*) FROM subscriptions WHERE tenant_id = $1", tenantID)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, 0, fmt.Errorf("list subscriptions: %w", err)
	}
	subs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Subscription, error) { return scanSubscription(r, s.secrets) })
	if err != nil {
		return nil, 0, fmt.Errorf("list subscriptions: %w", err)
	}
	var total int64
	if err := br.QueryRow().Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count subscriptions: %w", err)
	}
	return subs, total, nil
}

// UpdateSubscription locks a subscription, lets fn change it, and stores the result when
// fn reports a change. Deactivating a subscription fails its pending deliveries in the
// same transaction: deliveries are only sent to active subscriptions.
func (s *Store) UpdateSubscription(ctx context.Context, tenantID, id string, fn func(*domain.Subscription) bool) (domain.Subscription, error) {
	var out domain.Subscription
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		sub, err := getSubscription(ctx, tx, s.secrets, tenantID, id, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		wasActive := sub.Active
		if fn(&sub) {
			secret, previous := sealSecrets(s.secrets, sub)
			_, err := tx.Exec(ctx, `UPDATE subscriptions SET url = $3, events = $4, active = $5, secret = $6,
				previous_secret = $7, previous_secret_until = $8, disabled_reason = $9, disabled_at = $10, updated_at = $11,
				failing_since = CASE WHEN $5 AND NOT active THEN NULL ELSE failing_since END
				WHERE tenant_id = $1 AND subscription_id = $2`, tenantID, id, sub.URL, sub.Events, sub.Active,
				secret, previous, sub.PreviousSecretUntil, sub.DisabledReason, sub.DisabledAt, sub.UpdatedAt)
			if err != nil {
				return fmt.Errorf("update subscription: %w", err)
			}
			if wasActive && !sub.Active {
				if err := failPending(ctx, tx, tenantID, []string{id}); err != nil {
					return err
				}
			}
		}
		out = sub
		return nil
	})
	return out, err
}

// failPending ends the pending deliveries of the given subscriptions as failed. An
// attempt in flight still records its outcome when it ends.
func failPending(ctx context.Context, tx pgx.Tx, tenantID string, subscriptionIDs []string) error {
	_, err := tx.Exec(ctx, `UPDATE deliveries SET status = 'failed', next_attempt_at = NULL, lease_expires_at = NULL,
		updated_at = date_trunc('milliseconds', now())
		WHERE tenant_id = $1 AND subscription_id = ANY($2) AND status = 'pending'`, tenantID, subscriptionIDs)
	if err != nil {
		return fmt.Errorf("fail pending deliveries: %w", err)
	}
	return nil
}

// DeleteSubscription removes a subscription with its deliveries.
func (s *Store) DeleteSubscription(ctx context.Context, tenantID, id string) error {
	tag, err := s.pool.Exec(ctx, "DELETE FROM subscriptions WHERE tenant_id = $1 AND subscription_id = $2", tenantID, id)
	if err != nil {
		return fmt.Errorf("delete subscription: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return domain.ErrSubscriptionNotFound
	}
	return nil
}

// deliveryCols reads a delivery of the table deliveries with the count of its attempts
// (an index-only count: the attempts themselves are read by attachAttempts, bounded).
const deliveryCols = `delivery_id, subscription_id, event_id, event_type, status, created_at, next_attempt_at,
	coalesce(lease_expires_at > now(), false),
	(SELECT count(*) FROM delivery_attempts a
		WHERE a.tenant_id = deliveries.tenant_id AND a.delivery_id = deliveries.delivery_id)`

func scanDelivery(r pgx.Row) (domain.Delivery, error) {
	var d domain.Delivery
	err := r.Scan(&d.ID, &d.SubscriptionID, &d.EventID, &d.EventType, &d.Status, &d.CreatedAt, &d.NextAttemptAt, &d.InFlight,
		&d.AttemptsCount)
	return d, err
}

// subscriptionExists reports whether the tenant has the subscription.
func subscriptionExists(ctx context.Context, q postgres.Conn, tenantID, id string) error {
	var ok bool
	if err := q.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM subscriptions WHERE tenant_id = $1 AND subscription_id = $2)",
		tenantID, id).Scan(&ok); err != nil {
		return fmt.Errorf("look up subscription: %w", err)
	}
	if !ok {
		return domain.ErrSubscriptionNotFound
	}
	return nil
}

// ListDeliveries returns up to limit deliveries of a subscription, newest first, each with
// its latest attempts, and the count of deliveries matching the filter.
func (s *Store) ListDeliveries(ctx context.Context, tenantID, subscriptionID string, f domain.DeliveryFilter, limit int) ([]domain.Delivery, int64, error) {
	var out []domain.Delivery
	var total int64
	// One snapshot for the existence check, the page, the count and the attempts.
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err := pgx.BeginTxFunc(ctx, s.pool, opts, func(tx pgx.Tx) error {
		if err := subscriptionExists(ctx, tx, tenantID, subscriptionID); err != nil {
			return err
		}
		// An unbounded upper key makes the first page the same query as the others.
		before := f.Before
		if before == "" {
			before = "\U0010FFFF"
		}
		var rows pgx.Rows
		var err error
		if f.Status == "" {
			rows, err = tx.Query(ctx, "SELECT "+deliveryCols+` FROM deliveries
				WHERE tenant_id = $1 AND subscription_id = $2 AND delivery_id < $3
				ORDER BY delivery_id DESC LIMIT $4`, tenantID, subscriptionID, before, limit)
		} else {
			rows, err = tx.Query(ctx, "SELECT "+deliveryCols+` FROM deliveries
				WHERE tenant_id = $1 AND subscription_id = $2 AND status = $3 AND delivery_id < $4
				ORDER BY delivery_id DESC LIMIT $5`, tenantID, subscriptionID, f.Status, before, limit)
		}
		if err != nil {
			return fmt.Errorf("list deliveries: %w", err)
		}
		if out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Delivery, error) { return scanDelivery(r) }); err != nil {
			return fmt.Errorf("list deliveries: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND subscription_id = $2
			AND ($3 = '' OR status = $3)`, tenantID, subscriptionID, f.Status).Scan(&total); err != nil {
			return fmt.Errorf("count deliveries: %w", err)
		}
		return attachAttempts(ctx, tx, tenantID, out)
	})
	return out, total, err
}

// attachAttempts loads the latest attempts of the deliveries (domain.ListedAttempts of
// each at most, oldest first): the database reads and sends no more.
func attachAttempts(ctx context.Context, q postgres.Conn, tenantID string, ds []domain.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	ids := make([]string, len(ds))
	index := make(map[string]int, len(ds))
	for i := range ds {
		ids[i], index[ds[i].ID] = ds[i].ID, i
		ds[i].Attempts = []domain.Attempt{}
	}
	rows, err := q.Query(ctx, `SELECT a.delivery_id, a.attempted_at, a.status_code, a.duration_ms, a.error, a.response_snippet
		FROM unnest($2::text[]) AS d(id) CROSS JOIN LATERAL (
			SELECT * FROM delivery_attempts x WHERE x.tenant_id = $1 AND x.delivery_id = d.id
			ORDER BY x.attempt_no DESC LIMIT $3) AS a
		ORDER BY a.delivery_id, a.attempt_no`, tenantID, ids, domain.ListedAttempts)
	if err != nil {
		return fmt.Errorf("load attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var a domain.Attempt
		if err := rows.Scan(&id, &a.AttemptedAt, &a.StatusCode, &a.DurationMs, &a.Error, &a.ResponseSnippet); err != nil {
			return fmt.Errorf("load attempts: %w", err)
		}
		d := &ds[index[id]]
		d.Attempts = append(d.Attempts, a)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load attempts: %w", err)
	}
	return nil
}

// GetDelivery returns one delivery of a subscription with its latest attempts.
func (s *Store) GetDelivery(ctx context.Context, tenantID, subscriptionID, deliveryID string) (domain.Delivery, error) {
	return getDelivery(ctx, s.pool, tenantID, subscriptionID, deliveryID, "")
}

func getDelivery(ctx context.Context, q postgres.Conn, tenantID, subscriptionID, deliveryID, lock string) (domain.Delivery, error) {
	d, err := scanDelivery(q.QueryRow(ctx, "SELECT "+deliveryCols+` FROM deliveries
		WHERE tenant_id = $1 AND subscription_id = $2 AND delivery_id = $3 `+lock, tenantID, subscriptionID, deliveryID))
	if postgres.IsNoRows(err) {
		if err := subscriptionExists(ctx, q, tenantID, subscriptionID); err != nil {
			return domain.Delivery{}, err
		}
		return domain.Delivery{}, domain.ErrDeliveryNotFound
	}
	if err != nil {
		return domain.Delivery{}, fmt.Errorf("get delivery: %w", err)
	}
	ds := []domain.Delivery{d}
	if err := attachAttempts(ctx, q, tenantID, ds); err != nil {
		return domain.Delivery{}, err
	}
	return ds[0], nil
}

// RetryDelivery makes a delivery due now with a fresh retry schedule, whatever its state,
// unless an attempt is in flight, the subscription is inactive or the delivery has made
// domain.RetryAttemptsLimit attempts. It wakes the workers.
func (s *Store) RetryDelivery(ctx context.Context, tenantID, subscriptionID, deliveryID string) (domain.Delivery, error) {
	var out domain.Delivery
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		// Lock the subscription against a concurrent deactivation, which would otherwise
		// miss this delivery becoming pending.
		sub, err := getSubscription(ctx, tx, s.secrets, tenantID, subscriptionID, "FOR SHARE")
		if err != nil {
			return err
		}
		d, err := getDelivery(ctx, tx, tenantID, subscriptionID, deliveryID, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		if !sub.Active {
			return domain.ErrSubscriptionInactive
		}
		if d.InFlight {
			return domain.ErrAttemptInProgress
		}
		if err := d.CheckRetry(); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `UPDATE deliveries SET status = 'pending', retry_step = 0, lease_expires_at = NULL,
				next_attempt_at = date_trunc('milliseconds', now()), updated_at = date_trunc('milliseconds', now())
			WHERE tenant_id = $1 AND delivery_id = $2 RETURNING status, next_attempt_at`, tenantID, deliveryID).
			Scan(&d.Status, &d.NextAttemptAt); err != nil {
			return fmt.Errorf("retry delivery: %w", err)
		}
		out = d
		return notify(ctx, tx, tenantID, *d.NextAttemptAt)
	})
	return out, err
}
