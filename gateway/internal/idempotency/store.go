// Package idempotency makes a POST safe to retry: a request sent with an Idempotency-Key
// header runs at most once per tenant and key, and its answer is stored in the gateway's
// PostgreSQL for a day and replayed to every retry of the same request (docs/api.md,
// "Idempotent retries").
package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/retention"
)

// Outcome is what Begin found for a request.
type Outcome int

// The outcomes of Begin.
const (
	// Proceed: the request is the key's first (or its earlier run was abandoned): run it.
	Proceed Outcome = iota
	// InFlight: the same request runs now; the client retries later.
	InFlight
	// Mismatch: the key was used for another request.
	Mismatch
	// Replay: the request ran; Answer holds what it answered.
	Replay
)

// Answer is a stored answer.
type Answer struct {
	Status  int
	Headers map[string]string
	Body    []byte
}

// Store keeps the keys and their answers in the gateway database.
type Store struct{ pool *pgxpool.Pool }

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Begin claims tenant's key for the request whose fingerprint is fp, in flight for lease
// and kept for ttl. A key whose row has expired, or whose earlier run of the same
// request was abandoned (its lease ran out), is claimed anew.
func (s *Store) Begin(ctx context.Context, tenant, key string, fp []byte, lease, ttl time.Duration) (Outcome, Answer, error) {
	for range 3 { // a row deleted between the two statements is claimed on the next round
		tag, err := s.pool.Exec(ctx, `
			INSERT INTO idempotency_keys AS k (tenant_id, idem_key, fingerprint, locked_until, expires_at)
			VALUES ($1, $2, $3, now() + $4::float8 * interval '1 second', now() + $5::float8 * interval '1 second')
			ON CONFLICT (tenant_id, idem_key) DO UPDATE
			    SET fingerprint = EXCLUDED.fingerprint, locked_until = EXCLUDED.locked_until,
			        status = NULL, headers = NULL, body = NULL, created_at = now(), expires_at = EXCLUDED.expires_at
			    WHERE k.expires_at <= now()
			       OR (k.locked_until <= now() AND k.fingerprint = EXCLUDED.fingerprint)`,
			tenant, key, fp, lease.Seconds(), ttl.Seconds())
		if err != nil {
			return 0, Answer{}, fmt.Errorf("idempotency: claim: %w", err)
		}
		if tag.RowsAffected() == 1 {
			return Proceed, Answer{}, nil
		}
		var (
			stored  []byte
			locked  *time.Time
			a       Answer
			status  *int32
			headers []byte
		)
		err = s.pool.QueryRow(ctx, `
			SELECT fingerprint, locked_until, status, headers, body FROM idempotency_keys
			WHERE tenant_id = $1 AND idem_key = $2 AND expires_at > now()`, tenant, key).
			Scan(&stored, &locked, &status, &headers, &a.Body)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return 0, Answer{}, fmt.Errorf("idempotency: read: %w", err)
		}
		switch {
		case string(stored) != string(fp):
			return Mismatch, Answer{}, nil
		case locked != nil:
			return InFlight, Answer{}, nil
		}
		a.Status = int(*status)
		if err := json.Unmarshal(headers, &a.Headers); err != nil {
			return 0, Answer{}, fmt.Errorf("idempotency: stored headers: %w", err)
		}
		return Replay, a, nil
	}
	return 0, Answer{}, errors.New("idempotency: the key's row changed under every attempt")
}

// Complete stores the answer of tenant's key's request, ending its flight.
func (s *Store) Complete(ctx context.Context, tenant, key string, a Answer) error {
	headers, err := json.Marshal(a.Headers)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `
		UPDATE idempotency_keys SET locked_until = NULL, status = $3, headers = $4, body = $5
		WHERE tenant_id = $1 AND idem_key = $2 AND locked_until IS NOT NULL`, tenant, key, a.Status, headers, a.Body)
	if err != nil {
		return fmt.Errorf("idempotency: store the answer: %w", err)
	}
	return nil
}

// Release forgets tenant's key while its request is in flight: the request did not run,
// so a retry may.
func (s *Store) Release(ctx context.Context, tenant, key string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE tenant_id = $1 AND idem_key = $2 AND locked_until IS NOT NULL`,
		tenant, key)
	if err != nil {
		return fmt.Errorf("idempotency: release: %w", err)
	}
	return nil
}

// RetentionTable is the keys' table for libs/retention's pruner: a row is claimed anew
// (created_at reset) whenever it expires, so it is past its expires_at once its
// created_at is older than ttl.
func RetentionTable(ttl time.Duration) retention.Table {
	return retention.Table{Name: "idempotency_keys", Column: "created_at", Keep: ttl}
}
