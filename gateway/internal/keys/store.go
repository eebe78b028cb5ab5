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

const columns = "key_id, hash, prefix, name, tenant_ids, rate_limit, rate_window_ms, created_at, revoked_at"

func scanKey(row pgx.Row) (Key, error) {
	var (
		k        Key
		hash     []byte
		limit    *int32
		windowMs *int32
	)
	if err := row.Scan(&k.ID, &hash, &k.Prefix, &k.Name, &k.TenantIDs, &limit, &windowMs, &k.CreatedAt, &k.RevokedAt); err != nil {
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
		INSERT INTO api_keys (key_id, hash, prefix, name, tenant_ids, rate_limit, rate_window_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		RETURNING `+columns, k.ID, k.Hash[:], k.Prefix, k.Name, k.TenantIDs, limit, windowMs)
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

// Active returns every key that is not revoked (the cache's contents).
func (s *Store) Active(ctx context.Context) ([]Key, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+columns+" FROM api_keys WHERE revoked_at IS NULL")
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

// Pool exposes the pool (for the cache's notification listener).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
