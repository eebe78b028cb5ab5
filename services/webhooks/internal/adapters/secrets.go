package adapters

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/services/webhooks/internal/adapters/secretbox"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// The columns that hold signing secrets, sealed (secretbox), or in plaintext when written
// before sealing existed.
const (
	secretColumn         = "secret"
	previousSecretColumn = "previous_secret"
)

func binding(tenantID, subscriptionID, column string) secretbox.Binding {
	return secretbox.Binding{TenantID: tenantID, SubscriptionID: subscriptionID, Column: column}
}

// sealSecrets returns the subscription's secrets as they are stored.
func sealSecrets(keys *secretbox.Keyring, sub domain.Subscription) (secret string, previous *string) {
	secret = keys.Seal(sub.Secret, binding(sub.TenantID, sub.ID, secretColumn))
	if sub.PreviousSecret != nil {
		p := keys.Seal(*sub.PreviousSecret, binding(sub.TenantID, sub.ID, previousSecretColumn))
		previous = &p
	}
	return secret, previous
}

// openSecrets replaces the stored secrets of sub, as scanned, with the secrets themselves.
func openSecrets(keys *secretbox.Keyring, sub *domain.Subscription) error {
	secret, _, err := keys.Open(sub.Secret, binding(sub.TenantID, sub.ID, secretColumn))
	if err != nil {
		return fmt.Errorf("subscription %s: signing secret: %w", sub.ID, err)
	}
	sub.Secret = secret
	if sub.PreviousSecret != nil {
		prev, _, err := keys.Open(*sub.PreviousSecret, binding(sub.TenantID, sub.ID, previousSecretColumn))
		if err != nil {
			return fmt.Errorf("subscription %s: previous signing secret: %w", sub.ID, err)
		}
		sub.PreviousSecret = &prev
	}
	return nil
}

// openJobs opens the claimed jobs' secrets. A job whose secret does not open (its key
// was removed from the ring too early) gets none: its attempt fails and is retried, so
// the delivery waits for the key to come back instead of being lost.
func (s *Store) openJobs(jobs []domain.Job) {
	for i := range jobs {
		j := &jobs[i]
		secret, _, err := s.secrets.Open(j.Secret, binding(j.TenantID, j.SubscriptionID, secretColumn))
		if err != nil {
			j.Secret, j.PreviousSecret = "", nil
			continue
		}
		j.Secret = secret
		if j.PreviousSecret != nil {
			prev, _, err := s.secrets.Open(*j.PreviousSecret, binding(j.TenantID, j.SubscriptionID, previousSecretColumn))
			if err != nil {
				j.PreviousSecret = nil // the current secret still signs
				continue
			}
			j.PreviousSecret = &prev
		}
	}
}

// ResealSecrets seals again under the primary key every stored secret that is in
// plaintext or sealed under another key, batch rows at a time, each batch in a short
// transaction of its own that skips rows being updated (the next pass takes them).
func (s *Store) ResealSecrets(ctx context.Context, batch int) (domain.Resealed, error) {
	var out domain.Resealed
	afterTenant, afterID := "", ""
	for {
		n, last, err := s.resealBatch(ctx, afterTenant, afterID, batch, &out)
		if err != nil {
			return out, err
		}
		if n < batch {
			break
		}
		afterTenant, afterID = last[0], last[1]
	}
	var err error
	out.Remaining, err = s.StaleSecrets(ctx)
	return out, err
}

// resealBatch seals again up to batch rows after (afterTenant, afterID) and returns how
// many it read and the key of the last.
func (s *Store) resealBatch(ctx context.Context, afterTenant, afterID string, batch int, out *domain.Resealed) (int, [2]string, error) {
	var n int
	var last [2]string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT tenant_id, subscription_id, secret, previous_secret FROM subscriptions
			WHERE (tenant_id, subscription_id) > ($1, $2)
			  AND (NOT starts_with(secret, $3) OR NOT starts_with(previous_secret, $3))
			ORDER BY tenant_id, subscription_id LIMIT $4
			FOR NO KEY UPDATE SKIP LOCKED`, afterTenant, afterID, s.secrets.SealedPrefix(), batch)
		if err != nil {
			return fmt.Errorf("read secrets to seal: %w", err)
		}
		subs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Subscription, error) {
			var sub domain.Subscription
			err := r.Scan(&sub.TenantID, &sub.ID, &sub.Secret, &sub.PreviousSecret)
			return sub, err
		})
		if err != nil {
			return fmt.Errorf("read secrets to seal: %w", err)
		}
		n = len(subs)
		b := &pgx.Batch{}
		for _, sub := range subs {
			last = [2]string{sub.TenantID, sub.ID}
			if err := openSecrets(s.secrets, &sub); err != nil {
				out.Unreadable = append(out.Unreadable, sub.TenantID+"/"+sub.ID)
				continue
			}
			secret, previous := sealSecrets(s.secrets, sub)
			b.Queue(`UPDATE subscriptions SET secret = $3, previous_secret = $4
				WHERE tenant_id = $1 AND subscription_id = $2`, sub.TenantID, sub.ID, secret, previous)
		}
		if b.Len() == 0 {
			return nil
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("seal secrets: %w", err)
		}
		out.Sealed += b.Len()
		return nil
	})
	return n, last, err
}

// StaleSecrets counts the subscriptions whose secrets are not all sealed under the
// primary key: in plaintext, or under an older key. Zero means the older keys can go.
func (s *Store) StaleSecrets(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM subscriptions
		WHERE NOT starts_with(secret, $1) OR NOT starts_with(previous_secret, $1)`, s.secrets.SealedPrefix()).Scan(&n); err != nil {
		return 0, fmt.Errorf("count stale secrets: %w", err)
	}
	return n, nil
}
