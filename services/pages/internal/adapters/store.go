// Package adapters stores pages, audiences, versions and messages in PostgreSQL (every
// change writes the events the use cases chose to the outbox in its transaction) and
// wakes the processing workers; it holds the service's page and audience existence
// checks, which the stores of the audience sessions and page links below use too.
package adapters

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

// Store is the pages core repository.
type Store struct {
	pool *pgxpool.Pool
	out  outbox.Writer
}

// NewStore returns a Store on pool that writes its events through out.
func NewStore(pool *pgxpool.Pool, out outbox.Writer) *Store { return &Store{pool: pool, out: out} }

// AddEvents writes the tenant's events to the outbox within tx, in order; a zero event
// announces nothing. Every event of the service goes to the pages topic.
func AddEvents(ctx context.Context, out outbox.Writer, tx pgx.Tx, tenantID string, evts ...domain.Event) error {
	envs, err := envelopes(tenantID, evts)
	if err != nil {
		return err
	}
	return out.Add(ctx, tx, events.TopicPages, envs...)
}

// queueEvents queues, in b, what AddEvents writes.
func (s *Store) queueEvents(ctx context.Context, b *pgx.Batch, tenantID string, evts ...domain.Event) error {
	envs, err := envelopes(tenantID, evts)
	if err != nil {
		return err
	}
	return s.out.Queue(ctx, b, events.TopicPages, envs...)
}

func envelopes(tenantID string, evts []domain.Event) ([]events.Envelope, error) {
	envs := make([]events.Envelope, 0, len(evts))
	for _, e := range evts {
		if e.Type == "" {
			continue
		}
		env, err := events.New(tenantID, e.Type, e.Subject, e.Payload)
		if err != nil {
			return nil, err
		}
		envs = append(envs, env)
	}
	return envs, nil
}

const pageCols = `id, tenant_id, name, title, page_context, brand_id, page_type, status, flags, audiences_count,
	actions, action_card_widgets, footer_links, nav_links, scripts, header_action_id, metadata,
	created_at, updated_at, archived_at, deleted_at`

func scanPage(r pgx.Row) (domain.Page, error) {
	var p domain.Page
	var actions, widgets, footer, nav, scripts, meta []byte
	err := r.Scan(&p.ID, &p.TenantID, &p.Name, &p.Title, &p.PageContext, &p.BrandID, &p.PageType, &p.Status,
		&p.Flags, &p.AudiencesCount, &actions, &widgets, &footer, &nav, &scripts, &p.HeaderActionID, &meta,
		&p.CreatedAt, &p.UpdatedAt, &p.ArchivedAt, &p.DeletedAt)
	if err != nil {
		return p, err
	}
	for _, f := range []struct {
		b   []byte
		dst any
	}{{actions, &p.Actions}, {widgets, &p.ActionCardWidgets}, {footer, &p.FooterLinks}, {nav, &p.NavLinks},
		{scripts, &p.Scripts}, {meta, &p.Metadata}} {
		if len(f.b) == 0 {
			continue
		}
		if err := json.Unmarshal(f.b, f.dst); err != nil {
			return p, fmt.Errorf("decode page %s: %w", p.ID, err)
		}
	}
	return p, nil
}

// jsonb renders v for a jsonb column; a nil pointer is SQL NULL.
func jsonb(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode jsonb: %w", err)
	}
	if string(b) == "null" {
		return nil, nil
	}
	return b, nil
}

// pageArgs are the stored values of p in pageCols order.
func pageArgs(p domain.Page) ([]any, error) {
	args := []any{p.ID, p.TenantID, p.Name, p.Title, p.PageContext, p.BrandID, p.PageType, p.Status, p.Flags, p.AudiencesCount}
	for _, v := range []any{p.Actions, p.ActionCardWidgets, p.FooterLinks, p.NavLinks, p.Scripts} {
		b, err := jsonb(v)
		if err != nil {
			return nil, err
		}
		if b == nil {
			b = []byte("[]")
		}
		args = append(args, b)
	}
	meta, err := jsonb(p.Metadata)
	if err != nil {
		return nil, err
	}
	return append(args, p.HeaderActionID, meta, p.CreatedAt, p.UpdatedAt, p.ArchivedAt, p.DeletedAt), nil
}

// CreatePage stores a new page.
func (s *Store) CreatePage(ctx context.Context, p domain.Page) error {
	args, err := pageArgs(p)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, "INSERT INTO pages ("+pageCols+`) VALUES
		($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)`, args...)
	if err != nil {
		return fmt.Errorf("insert page: %w", err)
	}
	return nil
}

// GetPage returns a page that is not deleted.
func (s *Store) GetPage(ctx context.Context, tenantID, id string) (domain.Page, error) {
	p, err := scanPage(s.pool.QueryRow(ctx, "SELECT "+pageCols+" FROM pages WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL",
		tenantID, id))
	if postgres.IsNoRows(err) {
		return p, domain.ErrPageNotFound
	}
	if err != nil {
		return p, fmt.Errorf("get page: %w", err)
	}
	return p, nil
}

// ListPages returns up to limit visible pages after the ID (creation order) and their count.
func (s *Store) ListPages(ctx context.Context, tenantID, afterID string, limit int) ([]domain.Page, int64, error) {
	return ListAndCount(ctx, s.pool, "pages", scanPage,
		"SELECT "+pageCols+` FROM pages WHERE tenant_id = $1 AND deleted_at IS NULL AND id > $2
		ORDER BY id LIMIT $3`, []any{tenantID, afterID, limit},
		"SELECT count(*) FROM pages WHERE tenant_id = $1 AND deleted_at IS NULL", tenantID)
}

// ListAndCount reads the rows of the list query by scan and the count of the count
// query in one round trip; what names them in errors.
func ListAndCount[T any](ctx context.Context, pool *pgxpool.Pool, what string, scan func(pgx.Row) (T, error),
	list string, listArgs []any, count string, countArgs ...any) ([]T, int64, error) {
	b := &pgx.Batch{}
	b.Queue(list, listArgs...)
	b.Queue(count, countArgs...)
	br := pool.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", what, err)
	}
	var total int64
	if err := br.QueryRow().Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count %s: %w", what, err)
	}
	return out, total, nil
}

// UpdatePage locks a page, lets change alter it and stores the result with its event. A
// deleted page is found only when withDeleted is set (restore).
func (s *Store) UpdatePage(ctx context.Context, tenantID, id string, withDeleted bool, change domain.Change[domain.Page]) (domain.Page, error) {
	var out domain.Page
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		p, err := scanPage(tx.QueryRow(ctx, "SELECT "+pageCols+" FROM pages WHERE tenant_id = $1 AND id = $2 FOR UPDATE", tenantID, id))
		if postgres.IsNoRows(err) || (err == nil && p.DeletedAt != nil && !withDeleted) {
			return domain.ErrPageNotFound
		}
		if err != nil {
			return fmt.Errorf("load page: %w", err)
		}
		evt, changed, err := change(&p)
		if err != nil || !changed {
			out = p
			return err
		}
		// The row written is the one locked: change alters the page, never which it is.
		p.ID, p.TenantID = id, tenantID
		args, err := pageArgs(p)
		if err != nil {
			return err
		}
		// args are in pageCols order; audiences_count (args[9]) and created_at (args[17])
		// never change here (the count changes only in CreateAudience).
		upd := make([]any, 0, len(args)-2)
		upd = append(upd, args[:9]...)
		upd = append(upd, args[10:17]...)
		upd = append(upd, args[18:]...)
		_, err = tx.Exec(ctx, `UPDATE pages SET name = $3, title = $4, page_context = $5, brand_id = $6, page_type = $7,
			status = $8, flags = $9, actions = $10, action_card_widgets = $11, footer_links = $12, nav_links = $13,
			scripts = $14, header_action_id = $15, metadata = $16, updated_at = $17, archived_at = $18, deleted_at = $19
			WHERE id = $1 AND tenant_id = $2`, upd...)
		if err != nil {
			return fmt.Errorf("update page: %w", err)
		}
		out = p
		return AddEvents(ctx, s.out, tx, tenantID, evt)
	})
	return out, err
}
