package keys

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNotFound is returned for an unknown key ID.
var ErrNotFound = errors.New("keys: not found")

// Store keeps keys in the gateway database.
type Store struct{ pool *pgxpool.Pool }

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

const columns = "key_id, hash, prefix, name, tenant_ids, rate_limit, rate_window_ms, created_at, revoked_at, " +
	"expires_at, scopes, rotated_from, (SELECT last_used_at FROM api_key_usage u WHERE u.key_id = api_keys.key_id)"

func scanKey(row pgx.Row) (Key, error) {
	var (
		k        Key
		hash     []byte
		limit    *int32
		windowMs *int32
	)
	if err := row.Scan(&k.ID, &hash, &k.Prefix, &k.Name, &k.TenantIDs, &limit, &windowMs, &k.CreatedAt, &k.RevokedAt,
		&k.ExpiresAt, &k.Scopes, &k.RotatedFrom, &k.LastUsedAt); err != nil {
		return Key{}, err
	}
	copy(k.Hash[:], hash)
	if limit != nil && windowMs != nil {
		k.RateLimit = &RateLimit{Limit: int(*limit), Window: time.Duration(*windowMs) * time.Millisecond}
	}
	return k, nil
}

// Insert stores a new key.
func (s *Store) Insert(ctx context.Context, k Key) (Key, error) {
	var limit, windowMs *int64
	if k.RateLimit != nil {
		l, w := int64(k.RateLimit.Limit), k.RateLimit.Window.Milliseconds()
		limit, windowMs = &l, &w
	}
	row := s.pool.QueryRow(ctx, `
		INSERT INTO api_keys (key_id, hash, prefix, name, tenant_ids, rate_limit, rate_window_ms, expires_at, scopes, rotated_from)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		RETURNING `+columns, k.ID, k.Hash[:], k.Prefix, k.Name, k.TenantIDs, limit, windowMs, k.ExpiresAt, k.Scopes, k.RotatedFrom)
	out, err := scanKey(row)
	if err != nil {
		return Key{}, fmt.Errorf("keys: insert: %w", err)
	}
	return out, nil
}

// Get returns one key, revoked or not.
func (s *Store) Get(ctx context.Context, id string) (Key, error) {
	k, err := scanKey(s.pool.QueryRow(ctx, "SELECT "+columns+" FROM api_keys WHERE key_id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Key{}, ErrNotFound
	}
	if err != nil {
		return Key{}, fmt.Errorf("keys: get: %w", err)
	}
	return k, nil
}

// List returns up to limit keys created after the key with ID after ("" from the start).
func (s *Store) List(ctx context.Context, after string, limit int) ([]Key, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+columns+" FROM api_keys WHERE key_id > $1 ORDER BY key_id LIMIT $2", after, limit)
	if err != nil {
		return nil, fmt.Errorf("keys: list: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Key, error) { return scanKey(r) })
	if err != nil {
		return nil, fmt.Errorf("keys: list: %w", err)
	}
	return out, nil
}

// Active returns every key that is neither revoked nor expired (the cache's contents; a
// key that expires while cached is refused by its ExpiresAt).
func (s *Store) Active(ctx context.Context) ([]Key, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+columns+" FROM api_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())")
	if err != nil {
		return nil, fmt.Errorf("keys: load active: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Key, error) { return scanKey(r) })
	if err != nil {
		return nil, fmt.Errorf("keys: load active: %w", err)
	}
	return out, nil
}

// Revoke marks a key revoked (idempotent) and returns it.
func (s *Store) Revoke(ctx context.Context, id string) (Key, error) {
	k, err := scanKey(s.pool.QueryRow(ctx, `
		UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE key_id = $1
		RETURNING `+columns, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Key{}, ErrNotFound
	}
	if err != nil {
		return Key{}, fmt.Errorf("keys: revoke: %w", err)
	}
	return k, nil
}

// ErrNotActive is returned when rotating a key that is revoked or expired.
var ErrNotActive = errors.New("keys: the key is revoked or expired")

// Rotate issues next as the successor of the key with ID id (the same tenants, scopes,
// name and rate limit, set here) and makes the old key expire after grace (or at its own
// expiry, if sooner); it returns the new key and the old one.
func (s *Store) Rotate(ctx context.Context, id string, next Key, grace time.Duration) (Key, Key, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Key{}, Key{}, fmt.Errorf("keys: rotate: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	old, err := scanKey(tx.QueryRow(ctx, `
		UPDATE api_keys SET expires_at = least(coalesce(expires_at, 'infinity'), now() + $2::float8 * interval '1 second')
		WHERE key_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
		RETURNING `+columns, id, grace.Seconds()))
	if errors.Is(err, pgx.ErrNoRows) {
		if _, gerr := s.Get(ctx, id); errors.Is(gerr, ErrNotFound) {
			return Key{}, Key{}, ErrNotFound
		}
		return Key{}, Key{}, ErrNotActive
	}
	if err != nil {
		return Key{}, Key{}, fmt.Errorf("keys: rotate: %w", err)
	}
	next.TenantIDs, next.Scopes, next.Name, next.RateLimit, next.RotatedFrom = old.TenantIDs, old.Scopes, old.Name, old.RateLimit, &old.ID
	var limit, windowMs *int64
	if next.RateLimit != nil {
		l, w := int64(next.RateLimit.Limit), next.RateLimit.Window.Milliseconds()
		limit, windowMs = &l, &w
	}
	created, err := scanKey(tx.QueryRow(ctx, `
		INSERT INTO api_keys (key_id, hash, prefix, name, tenant_ids, rate_limit, rate_window_ms, expires_at, scopes, rotated_from)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		RETURNING `+columns, next.ID, next.Hash[:], next.Prefix, next.Name, next.TenantIDs, limit, windowMs, next.ExpiresAt, next.Scopes, next.RotatedFrom))
	if err != nil {
		return Key{}, Key{}, fmt.Errorf("keys: rotate: insert the successor: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return Key{}, Key{}, fmt.Errorf("keys: rotate: %w", err)
	}
	return created, old, nil
}

// Touch records when keys were last used (key ID to time), in one statement; a later
// time never goes back.
func (s *Store) Touch(ctx context.Context, used map[string]time.Time) error {
	if len(used) == 0 {
		return nil
	}
	ids, times := make([]string, 0, len(used)), make([]time.Time, 0, len(used))
	for id, t := range used {
		ids, times = append(ids, id), append(times, t)
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO api_key_usage (key_id, last_used_at)
		SELECT u.id, u.t FROM unnest($1::text[], $2::timestamptz[]) AS u(id, t)
		WHERE EXISTS (SELECT 1 FROM api_keys k WHERE k.key_id = u.id)
		ON CONFLICT (key_id) DO UPDATE SET last_used_at = greatest(api_key_usage.last_used_at, EXCLUDED.last_used_at)`, ids, times)
	if err != nil {
		return fmt.Errorf("keys: record usage: %w", err)
	}
	return nil
}

// Pool exposes the pool (for the cache's notification listener).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
