// Package adapters stores the assets context in PostgreSQL; every change writes its event
// to the outbox in the same transaction, and every object that may have to be removed
// from storage is recorded in object_cleanup in the transaction that makes it so.
package adapters

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/assets/internal/domain"
)

// Store is the assets repository.
type Store struct {
	pool *pgxpool.Pool
	out  outbox.Writer
}

// NewStore returns a Store on pool that writes its events through out.
func NewStore(pool *pgxpool.Pool, out outbox.Writer) *Store { return &Store{pool: pool, out: out} }

const cols = `asset_id, tenant_id, name, purpose, tags, asset_type, parent_asset_id, hidden,
	file_id, object_key, content_type, size_bytes, sha256,
	preview_file_id, preview_key, preview_content_type, preview_size_bytes, preview_sha256,
	lifecycle_state, created_at, updated_at, trashed_at, deleted_at`

func scan(r pgx.Row) (domain.Asset, error) {
	var a domain.Asset
	var pID, pKey, pType, pSHA *string
	var pSize *int64
	var state string
	err := r.Scan(&a.ID, &a.TenantID, &a.Name, &a.Purpose, &a.Tags, &a.Type, &a.ParentID, &a.Hidden,
		&a.File.ID, &a.File.Key, &a.File.ContentType, &a.File.Size, &a.File.SHA256,
		&pID, &pKey, &pType, &pSize, &pSHA,
		&state, &a.CreatedAt, &a.UpdatedAt, &a.TrashedAt, &a.DeletedAt)
	if err != nil {
		return a, err
	}
	a.State = domain.State(state)
	if pID != nil && pKey != nil && pType != nil && pSize != nil && pSHA != nil {
		a.Preview = &domain.File{ID: *pID, Key: *pKey, ContentType: *pType, Size: *pSize, SHA256: *pSHA}
	}
	if a.Tags == nil {
		a.Tags = []string{}
	}
	return a, nil
}

func (s *Store) emit(ctx context.Context, tx pgx.Tx, tenantID string, evt domain.Event) error {
	return s.out.Emit(ctx, tx, events.TopicAssets, tenantID, evt.Type, evt.Subject, evt.Payload)
}

// Reserve records keys as objects to remove at due unless an asset claims them first.
// An upload calls it before writing an object, so a crash at any later point leaves the
// object tracked.
func (s *Store) Reserve(ctx context.Context, tenantID string, keys []string, due time.Time) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO object_cleanup (tenant_id, object_key, due_at)
		SELECT $1, k, $3 FROM unnest($2::text[]) k`, tenantID, keys, due)
	if err != nil {
		return fmt.Errorf("reserve objects: %w", err)
	}
	return nil
}

// Forget drops the cleanup records of keys (their objects are gone).
func (s *Store) Forget(ctx context.Context, keys []string) error {
	if _, err := s.pool.Exec(ctx, "DELETE FROM object_cleanup WHERE object_key = ANY($1)", keys); err != nil {
		return fmt.Errorf("forget objects: %w", err)
	}
	return nil
}

// DueAt makes the cleanup of keys due at due (their removal failed; the janitor retries).
func (s *Store) DueAt(ctx context.Context, keys []string, due time.Time) error {
	if _, err := s.pool.Exec(ctx, "UPDATE object_cleanup SET due_at = $2 WHERE object_key = ANY($1)", keys, due); err != nil {
		return fmt.Errorf("schedule object cleanup: %w", err)
	}
	return nil
}

// Create stores a new asset whose objects were written under keys, and its event, and
// claims those objects: their cleanup records go in the same transaction. When the
// janitor already took a record (the upload outlasted its grace period and the object
// may be gone or going), nothing is stored and the result is ErrUploadExpired.
func (s *Store) Create(ctx context.Context, a domain.Asset, keys []string, evt domain.Event) error {
	return postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if a.ParentID != nil {
			// FOR SHARE keeps the parent from being deleted until this commits.
			var state string
			err := tx.QueryRow(ctx, `SELECT lifecycle_state FROM assets WHERE tenant_id = $1 AND asset_id = $2 FOR SHARE`,
				a.TenantID, *a.ParentID).Scan(&state)
			if postgres.IsNoRows(err) || state == string(domain.Deleted) {
				return domain.ErrParentMissing
			}
			if err != nil {
				return fmt.Errorf("look up parent: %w", err)
			}
		}
		tag, err := tx.Exec(ctx, "DELETE FROM object_cleanup WHERE object_key = ANY($1) AND taken_at IS NULL", keys)
		if err != nil {
			return fmt.Errorf("claim objects: %w", err)
		}
		if tag.RowsAffected() != int64(len(keys)) {
			return domain.ErrUploadExpired
		}
		var pID, pKey, pType, pSHA *string
		var pSize *int64
		if p := a.Preview; p != nil {
			pID, pKey, pType, pSize, pSHA = &p.ID, &p.Key, &p.ContentType, &p.Size, &p.SHA256
		}
		_, err = tx.Exec(ctx, "INSERT INTO assets ("+cols+`) VALUES
			($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)`,
			a.ID, a.TenantID, a.Name, a.Purpose, a.Tags, a.Type, a.ParentID, a.Hidden,
			a.File.ID, a.File.Key, a.File.ContentType, a.File.Size, a.File.SHA256,
			pID, pKey, pType, pSize, pSHA,
			string(a.State), a.CreatedAt, a.UpdatedAt, a.TrashedAt, a.DeletedAt)
		if err != nil {
			return fmt.Errorf("insert asset: %w", err)
		}
		return s.emit(ctx, tx, a.TenantID, evt)
	})
}

// Get returns an asset of the tenant in any state.
func (s *Store) Get(ctx context.Context, tenantID, id string) (domain.Asset, error) {
	a, err := scan(s.pool.QueryRow(ctx, "SELECT "+cols+" FROM assets WHERE tenant_id = $1 AND asset_id = $2", tenantID, id))
	if postgres.IsNoRows(err) {
		return a, domain.ErrNotFound
	}
	if err != nil {
		return a, fmt.Errorf("get asset: %w", err)
	}
	return a, nil
}

// Update locks an asset, lets change change it, and stores the result with its event
// (and, for a deleted asset, the cleanup records of its objects, due at once) in one
// transaction when change reports a change.
func (s *Store) Update(ctx context.Context, tenantID, id string, change domain.Change[domain.Asset]) (domain.Asset, error) {
	var out domain.Asset
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		a, err := scan(tx.QueryRow(ctx, "SELECT "+cols+" FROM assets WHERE tenant_id = $1 AND asset_id = $2 FOR UPDATE", tenantID, id))
		if postgres.IsNoRows(err) {
			return domain.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("load asset: %w", err)
		}
		if err := s.apply(ctx, tx, &a, change); err != nil {
			return err
		}
		out = a
		return nil
	})
	return out, err
}

// apply lets change change a locked asset and, when it reports a change, stores the
// result and its event; a deleted asset's objects are due for removal from the time of
// its deletion.
func (s *Store) apply(ctx context.Context, tx pgx.Tx, a *domain.Asset, change domain.Change[domain.Asset]) error {
	evt, changed, err := change(a)
	if err != nil || !changed {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE assets SET lifecycle_state = $3, updated_at = $4, trashed_at = $5, deleted_at = $6
		WHERE tenant_id = $1 AND asset_id = $2`, a.TenantID, a.ID, string(a.State), a.UpdatedAt, a.TrashedAt, a.DeletedAt)
	if err != nil {
		return fmt.Errorf("update asset: %w", err)
	}
	if a.State == domain.Deleted {
		if _, err := tx.Exec(ctx, `INSERT INTO object_cleanup (tenant_id, object_key, due_at)
			SELECT $1, k, $3 FROM unnest($2::text[]) k ON CONFLICT (object_key) DO UPDATE SET due_at = excluded.due_at`,
			a.TenantID, a.Objects(), a.DeletedAt); err != nil {
			return fmt.Errorf("schedule object removal: %w", err)
		}
	}
	return s.emit(ctx, tx, a.TenantID, evt)
}

// List returns up to limit assets of the tenant in state, newest first, after the asset
// with ID after ("" for the first page), and the count of all matches.
func (s *Store) List(ctx context.Context, tenantID string, state domain.State, f domain.Filter, after string, limit int) ([]domain.Asset, int64, error) {
	// Only the conditions in use go into the statement, so the planner can use the index
	// that matches (with the type filter: tenant, state, type, ID).
	where := "tenant_id = $1 AND lifecycle_state = $2"
	args := []any{tenantID, string(state)}
	if f.Type != "" {
		args = append(args, f.Type)
		where += fmt.Sprintf(" AND asset_type = $%d", len(args))
	}
	if f.Query != "" {
		args = append(args, f.Query)
		n := len(args)
		where += fmt.Sprintf(` AND (strpos(lower(name), lower($%d)) > 0
			OR EXISTS (SELECT 1 FROM unnest(tags) t WHERE strpos(lower(t), lower($%d)) > 0))`, n, n)
	}
	page := where
	pageArgs := args
	if after != "" {
		pageArgs = append(append([]any{}, args...), after)
		page += fmt.Sprintf(" AND asset_id < $%d", len(pageArgs))
	}
	pageArgs = append(pageArgs, limit)
	b := &pgx.Batch{}
	b.Queue(fmt.Sprintf("SELECT "+cols+" FROM assets WHERE %s ORDER BY asset_id DESC LIMIT $%d", page, len(pageArgs)), pageArgs...)
	b.Queue("SELECT count(*) FROM assets WHERE "+where, args...)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, 0, fmt.Errorf("list assets: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Asset, error) { return scan(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("list assets: %w", err)
	}
	var total int64
	if err := br.QueryRow().Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count assets: %w", err)
	}
	return out, total, nil
}

// PurgeDue applies change (the deletion) to up to limit assets trashed before cutoff,
// across tenants, stores each as Update does, and returns how many and the objects to
// remove. SKIP LOCKED lets several replicas purge side by side without waiting on each
// other or taking the same asset twice.
func (s *Store) PurgeDue(ctx context.Context, cutoff time.Time, limit int, change domain.Change[domain.Asset]) (purged int, remove []string, err error) {
	err = postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "SELECT "+cols+` FROM assets WHERE lifecycle_state = 'trashed' AND trashed_at < $1
			ORDER BY trashed_at LIMIT $2 FOR UPDATE SKIP LOCKED`, cutoff, limit)
		if err != nil {
			return fmt.Errorf("find trashed assets: %w", err)
		}
		due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Asset, error) { return scan(r) })
		if err != nil {
			return fmt.Errorf("find trashed assets: %w", err)
		}
		for _, a := range due {
			if err := s.apply(ctx, tx, &a, change); err != nil {
				return err
			}
			if a.State == domain.Deleted {
				remove = append(remove, a.Objects()...)
			}
		}
		purged = len(due)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return purged, remove, nil
}

// TakeDue takes up to limit cleanup records due at now, across tenants, and returns their
// keys. It is one short statement: the caller removes the objects with no transaction
// open, then drops the records (Forget) or postpones them (DueAt). A taken record is due
// again at leaseEnd, so a janitor that dies in between leaves it to the next; until then
// no other replica takes it (SKIP LOCKED keeps concurrent takers apart), and no upload
// claims it any more (Create).
func (s *Store) TakeDue(ctx context.Context, now time.Time, limit int, leaseEnd time.Time) ([]string, error) {
	rows, err := s.pool.Query(ctx, `UPDATE object_cleanup c SET taken_at = $1, due_at = $3
		FROM (SELECT object_key FROM object_cleanup WHERE due_at <= $1
			ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED) d
		WHERE c.object_key = d.object_key
		RETURNING c.object_key`, now, limit, leaseEnd)
	if err != nil {
		return nil, fmt.Errorf("take due objects: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("take due objects: %w", err)
	}
	return keys, nil
}
