// Package pagelinks stores the page links in PostgreSQL.
package pagelinks

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/pages/internal/adapters"
	"github.com/customerapi/platform/services/pages/internal/domain/pagelink"
)

// Store keeps page links in PostgreSQL (pagelink.Repository). It reads the pages and
// audiences tables only through the service's existence checks (adapters.CheckPage,
// adapters.PageOfAudience).
type Store struct{ pool *pgxpool.Pool }

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

const linkCols = `id, tenant_id, tenant_domain_id, path, path_key, target_type, page_id, audience_id,
	created_at, updated_at, deleted_at`

func scanLink(r pgx.Row) (pagelink.Link, error) {
	var l pagelink.Link
	err := r.Scan(&l.ID, &l.TenantID, &l.DomainID, &l.Path, &l.PathKey, &l.TargetType, &l.PageID, &l.AudienceID,
		&l.CreatedAt, &l.UpdatedAt, &l.DeletedAt)
	return l, err
}

// Create stores a new link after checking its target: a page of the tenant that is not
// deleted, or an audience of such a page (whose page becomes the link's PageID; a
// PageID given with an audience must be that page). A path already linked on the domain
// is pagelink.ErrPathTaken.
func (s *Store) Create(ctx context.Context, l pagelink.Link) (pagelink.Link, error) {
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if l.AudienceID != nil {
			pageID, err := adapters.PageOfAudience(ctx, tx, l.TenantID, *l.AudienceID, l.PageID)
			if err != nil {
				return err
			}
			l.PageID = pageID
		} else if err := adapters.CheckPage(ctx, tx, l.TenantID, l.PageID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO page_links (`+linkCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			l.ID, l.TenantID, l.DomainID, l.Path, l.PathKey, l.TargetType, l.PageID, l.AudienceID, l.CreatedAt, l.UpdatedAt, l.DeletedAt)
		if postgres.IsCode(err, postgres.UniqueViolation) && postgres.ConstraintOf(err) == "page_links_path" {
			return pagelink.ErrPathTaken
		}
		if err != nil {
			return fmt.Errorf("insert page link: %w", err)
		}
		return nil
	})
	return l, err
}

// Get returns a link of the tenant, deleted or not.
func (s *Store) Get(ctx context.Context, tenantID, id string) (pagelink.Link, error) {
	l, err := scanLink(s.pool.QueryRow(ctx, `SELECT `+linkCols+` FROM page_links WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	if postgres.IsNoRows(err) {
		return pagelink.Link{}, pagelink.ErrNotFound
	}
	if err != nil {
		return pagelink.Link{}, fmt.Errorf("get page link: %w", err)
	}
	return l, nil
}

// Delete soft-deletes a link, freeing its path. Deleting a deleted link changes nothing.
func (s *Store) Delete(ctx context.Context, tenantID, id string, now time.Time) error {
	var found bool
	err := s.pool.QueryRow(ctx, `WITH d AS (
			UPDATE page_links SET deleted_at = $3, updated_at = $3
			WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM d) OR EXISTS (SELECT 1 FROM page_links WHERE tenant_id = $1 AND id = $2)`,
		tenantID, id, now).Scan(&found)
	if err != nil {
		return fmt.Errorf("delete page link: %w", err)
	}
	if !found {
		return pagelink.ErrNotFound
	}
	return nil
}

// likeEscape escapes LIKE's wildcards (the escape character is the backslash).
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// Search returns up to limit live links matching q after the position, in path order,
// and the number of links matching q.
func (s *Store) Search(ctx context.Context, tenantID string, q pagelink.Search, after *pagelink.After,
	limit int) ([]pagelink.Link, int64, error) {
	var query, pattern, targetType, pageID *string
	if q.Query != "" {
		p := "%" + likeEscape(pagelink.PathKey(q.Query)) + "%"
		query, pattern = &q.Query, &p
	}
	if q.TargetType != "" {
		targetType = &q.TargetType
	}
	if q.PageID != "" {
		pageID = &q.PageID
	}
	// Absent filters are NULL and match everything; each statement is one fixed SQL text.
	const where = `tenant_id = $1 AND deleted_at IS NULL AND coalesce(tenant_domain_id, '') = coalesce($2::text, '')
		AND ($3::text IS NULL OR path_key LIKE $4 OR audience_id = $3 OR page_id = $3)
		AND ($5::text IS NULL OR target_type = $5)
		AND ($6::text IS NULL OR page_id = $6)`
	var afterKey, afterID *string
	if after != nil {
		afterKey, afterID = &after.PathKey, &after.ID
	}
	return adapters.ListAndCount(ctx, s.pool, "page links", scanLink,
		`SELECT `+linkCols+` FROM page_links WHERE `+where+`
		AND ($7::text IS NULL OR (path_key, id) > ($7, $8::text))
		ORDER BY path_key, id LIMIT $9`, []any{tenantID, q.DomainID, query, pattern, targetType, pageID, afterKey, afterID, limit},
		`SELECT count(*) FROM page_links WHERE `+where, tenantID, q.DomainID, query, pattern, targetType, pageID)
}
