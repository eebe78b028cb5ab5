package adapters

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

const audienceCols = `a.id, a.tenant_id, a.page_id, a.computed_name, a.custom_name, a.status, a.flags, a.is_new_page_agent,
	a.person_id, a.person_route_key, a.action_form_id_override, a.action_form_instructions_override,
	a.action_url_override, a.supplementary_context, a.metadata_override, a.publish_behavior,
	a.latest_version_id, a.published_version_id, a.created_at, a.updated_at, a.archived_at, p.metadata`

// audienceRow is an audience with the IDs of its version pointers.
type audienceRow struct {
	domain.Audience
	latestID, publishedID *string
}

func scanAudience(r pgx.Row) (audienceRow, error) {
	var a audienceRow
	var override, pageMeta []byte
	err := r.Scan(&a.ID, &a.TenantID, &a.PageID, &a.ComputedName, &a.CustomName, &a.Status, &a.Flags, &a.IsNewPageAgent,
		&a.PersonID, &a.PersonRouteKey, &a.ActionFormIDOverride, &a.ActionFormInstructionsOverride,
		&a.ActionURLOverride, &a.SupplementaryContext, &override, &a.PublishBehavior,
		&a.latestID, &a.publishedID, &a.CreatedAt, &a.UpdatedAt, &a.ArchivedAt, &pageMeta)
	if err != nil {
		return a, err
	}
	if len(override) > 0 {
		if err := json.Unmarshal(override, &a.MetadataOverride); err != nil {
			return a, fmt.Errorf("decode audience %s: %w", a.ID, err)
		}
	}
	if len(pageMeta) > 0 {
		if err := json.Unmarshal(pageMeta, &a.PageMetadata); err != nil {
			return a, fmt.Errorf("decode page metadata: %w", err)
		}
	}
	return a, nil
}

const versionCols = `id, tenant_id, page_id, audience_id, version_number, status, is_new_page_agent, supplementary_context,
	operation_key, publish_on_complete, snapshot, queue_duration_ms, attempts, created_at, queued_at, processing_at,
	became_draft_at, cancelled_at, obsolete_at, published_at, archived_at`

func scanVersion(r pgx.Row) (domain.Version, error) {
	var v domain.Version
	var snap []byte
	err := r.Scan(&v.ID, &v.TenantID, &v.PageID, &v.AudienceID, &v.VersionNumber, &v.Status, &v.IsNewPageAgent,
		&v.SupplementaryContext, &v.OperationKey, &v.PublishOnComplete, &snap, &v.QueueDurationMs, &v.Attempts,
		&v.CreatedAt, &v.QueuedAt, &v.ProcessingAt, &v.BecameDraftAt, &v.CancelledAt, &v.ObsoleteAt, &v.PublishedAt, &v.ArchivedAt)
	if err != nil {
		return v, err
	}
	if len(snap) > 0 {
		if err := json.Unmarshal(snap, &v.Snapshot); err != nil {
			return v, fmt.Errorf("decode snapshot of %s: %w", v.ID, err)
		}
	}
	return v, nil
}

func collectVersions(rows pgx.Rows) ([]domain.Version, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Version, error) { return scanVersion(r) })
}

// attachVersions fills LatestVersion and PublishedVersion of the audiences.
func attachVersions(ctx context.Context, q postgres.Conn, tenantID string, rows []audienceRow) ([]domain.Audience, error) {
	var want []string
	for _, a := range rows {
		if a.latestID != nil {
			want = append(want, *a.latestID)
		}
		if a.publishedID != nil {
			want = append(want, *a.publishedID)
		}
	}
	var byID map[string]*domain.Version
	if len(want) > 0 {
		r, err := q.Query(ctx, "SELECT "+versionCols+" FROM audience_versions WHERE tenant_id = $1 AND id = ANY($2)", tenantID, want)
		if err != nil {
			return nil, fmt.Errorf("load versions: %w", err)
		}
		vs, err := collectVersions(r)
		if err != nil {
			return nil, fmt.Errorf("load versions: %w", err)
		}
		byID = versionsByID(vs)
	}
	out := make([]domain.Audience, len(rows))
	for i, a := range rows {
		out[i] = withVersions(a, byID)
	}
	return out, nil
}

// versionsByID indexes vs by their IDs.
func versionsByID(vs []domain.Version) map[string]*domain.Version {
	byID := make(map[string]*domain.Version, len(vs))
	for i := range vs {
		byID[vs[i].ID] = &vs[i]
	}
	return byID
}

// withVersions is the audience with its version pointers resolved through byID (a
// pointer to a version not there stays nil).
func withVersions(a audienceRow, byID map[string]*domain.Version) domain.Audience {
	out := a.Audience
	if a.latestID != nil {
		out.LatestVersion = byID[*a.latestID]
	}
	if a.publishedID != nil {
		out.PublishedVersion = byID[*a.publishedID]
	}
	return out
}

// queueVersion queues, in b, the statements that store a queued version: its row, the
// audience's pointer to it, its event and the wake-up of the workers (sent at commit).
// They go out in one round trip; on an error b must not be sent.
func (s *Store) queueVersion(ctx context.Context, b *pgx.Batch, v domain.Version, evt domain.Event) error {
	b.Queue("INSERT INTO audience_versions ("+versionCols+`) VALUES
		($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL, NULL, 0, $11, $12, NULL, NULL, NULL, NULL, NULL, NULL)`,
		v.ID, v.TenantID, v.PageID, v.AudienceID, v.VersionNumber, v.Status, v.IsNewPageAgent, v.SupplementaryContext,
		v.OperationKey, v.PublishOnComplete, v.CreatedAt, v.QueuedAt)
	b.Queue(`UPDATE audiences SET latest_version_id = $3, status = CASE WHEN archived_at IS NULL THEN $4 ELSE status END
		WHERE tenant_id = $1 AND id = $2`, v.TenantID, v.AudienceID, v.ID, v.Status)
	if err := s.queueEvents(ctx, b, v.TenantID, evt); err != nil {
		return err
	}
	b.Queue("SELECT pg_notify($1, '')", WorkChannel)
	return nil
}

// sendWrites sends the writes queued in b within tx and reports the first that failed.
func sendWrites(ctx context.Context, tx pgx.Tx, b *pgx.Batch, what string) error {
	return wrapErr(tx.SendBatch(ctx, b).Close(), what)
}

// CreateAudience stores a new audience under a visible, unarchived page with its first
// version, which evt announces, and counts it on the page.
func (s *Store) CreateAudience(ctx context.Context, a domain.Audience, v domain.Version, evt domain.Event) (domain.Audience, error) {
	var out domain.Audience
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var status string
		var deleted *time.Time
		var count int64
		var meta []byte
		err := tx.QueryRow(ctx, `SELECT status, deleted_at, audiences_count, metadata FROM pages
			WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, a.TenantID, a.PageID).Scan(&status, &deleted, &count, &meta)
		if postgres.IsNoRows(err) || (err == nil && deleted != nil) {
			return domain.ErrPageNotFound
		}
		if err != nil {
			return fmt.Errorf("lock page: %w", err)
		}
		if status == domain.PageArchived {
			return domain.ErrPageArchived
		}
		a.ComputedName = domain.AudienceName(count + 1)
		override, err := jsonb(a.MetadataOverride)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO audiences (tenant_id, id, page_id, computed_name, custom_name, status, flags,
			is_new_page_agent, person_id, person_route_key, action_form_id_override, action_form_instructions_override,
			action_url_override, supplementary_context, metadata_override, publish_behavior, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
			a.TenantID, a.ID, a.PageID, a.ComputedName, a.CustomName, a.Status, a.Flags, a.IsNewPageAgent, a.PersonID,
			a.PersonRouteKey, a.ActionFormIDOverride, a.ActionFormInstructionsOverride, a.ActionURLOverride,
			a.SupplementaryContext, override, a.PublishBehavior, a.CreatedAt, a.UpdatedAt)
		b.Queue("UPDATE pages SET audiences_count = audiences_count + 1 WHERE tenant_id = $1 AND id = $2",
			a.TenantID, a.PageID)
		if err := s.queueVersion(ctx, b, v, evt); err != nil {
			return err
		}
		if err := sendWrites(ctx, tx, b, "store audience"); err != nil {
			return err
		}
		if len(meta) > 0 {
			if err := json.Unmarshal(meta, &a.PageMetadata); err != nil {
				return fmt.Errorf("decode page metadata: %w", err)
			}
		}
		a.LatestVersion = &v
		out = a
		return nil
	})
	return out, err
}

const audienceFrom = ` FROM audiences a JOIN pages p ON p.tenant_id = a.tenant_id AND p.id = a.page_id AND p.deleted_at IS NULL`

// GetAudience returns an audience of a visible page with its version pointers resolved.
func (s *Store) GetAudience(ctx context.Context, tenantID, pageID, id string) (domain.Audience, error) {
	return s.getAudience(ctx, s.pool, tenantID, pageID, id, "")
}

func (s *Store) getAudience(ctx context.Context, q postgres.Conn, tenantID, pageID, id, lock string) (domain.Audience, error) {
	a, err := scanAudience(q.QueryRow(ctx, "SELECT "+audienceCols+audienceFrom+
		" WHERE a.tenant_id = $1 AND a.page_id = $2 AND a.id = $3"+lock, tenantID, pageID, id))
	if postgres.IsNoRows(err) {
		return domain.Audience{}, s.missingAudience(ctx, q, tenantID, pageID)
	}
	if err != nil {
		return domain.Audience{}, fmt.Errorf("get audience: %w", err)
	}
	out, err := attachVersions(ctx, q, tenantID, []audienceRow{a})
	if err != nil {
		return domain.Audience{}, err
	}
	return out[0], nil
}

// missingAudience tells which of page and audience does not exist.
func (s *Store) missingAudience(ctx context.Context, q postgres.Conn, tenantID, pageID string) error {
	if err := CheckPage(ctx, q, tenantID, pageID); err != nil {
		return err
	}
	return domain.ErrAudienceNotFound
}

// CheckPage reports domain.ErrPageNotFound unless the tenant has the page and it is not
// deleted. It is the one page existence check of the service: the sessions and page
// links features use it too.
func CheckPage(ctx context.Context, q postgres.Conn, tenantID, pageID string) error {
	var ok bool
	err := q.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pages WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL)",
		tenantID, pageID).Scan(&ok)
	if err != nil {
		return fmt.Errorf("look up page: %w", err)
	}
	if !ok {
		return domain.ErrPageNotFound
	}
	return nil
}

// PageOfAudience returns the page of one of the tenant's audiences whose page is not
// deleted; domain.ErrAudienceNotFound when there is none, or when wantPage is set and
// the audience belongs to another page. It is the one audience existence check of the
// service.
func PageOfAudience(ctx context.Context, q postgres.Conn, tenantID, audienceID, wantPage string) (string, error) {
	var pageID string
	err := q.QueryRow(ctx, `SELECT a.page_id FROM audiences a
		JOIN pages p ON p.tenant_id = a.tenant_id AND p.id = a.page_id AND p.deleted_at IS NULL
		WHERE a.tenant_id = $1 AND a.id = $2`, tenantID, audienceID).Scan(&pageID)
	if postgres.IsNoRows(err) || (err == nil && wantPage != "" && wantPage != pageID) {
		return "", domain.ErrAudienceNotFound
	}
	if err != nil {
		return "", fmt.Errorf("look up audience: %w", err)
	}
	return pageID, nil
}

// ListAudiences returns up to limit audiences of a visible page after the ID, and their count.
func (s *Store) ListAudiences(ctx context.Context, tenantID, pageID, afterID string, limit int) ([]domain.Audience, int64, error) {
	var total int64
	var exists bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pages WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL),
		(SELECT count(*) FROM audiences WHERE tenant_id = $1 AND page_id = $2)`, tenantID, pageID).Scan(&exists, &total)
	if err != nil {
		return nil, 0, fmt.Errorf("count audiences: %w", err)
	}
	if !exists {
		return nil, 0, domain.ErrPageNotFound
	}
	rows, err := s.pool.Query(ctx, "SELECT "+audienceCols+audienceFrom+
		" WHERE a.tenant_id = $1 AND a.page_id = $2 AND a.id > $3 ORDER BY a.id LIMIT $4", tenantID, pageID, afterID, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("list audiences: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audienceRow, error) { return scanAudience(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("list audiences: %w", err)
	}
	out, err := attachVersions(ctx, s.pool, tenantID, list)
	return out, total, err
}

// UpdateAudience locks an audience, lets change alter it and stores the result with
// its event.
func (s *Store) UpdateAudience(ctx context.Context, tenantID, pageID, id string, change domain.Change[domain.Audience]) (domain.Audience, error) {
	return s.updateAudience(ctx, tenantID, pageID, id, change, nil)
}

// ArchiveAudience updates an audience by archive and, when that changed it, cancels its
// queued versions at its ArchivedAt, each with the event cancelled chooses, and reads
// the audience again. A version a worker is claiming right now is skipped, not waited
// for (the claim locks the version, then the audience: waiting here would deadlock); its
// finish sees the archived audience and cancels it.
func (s *Store) ArchiveAudience(ctx context.Context, tenantID, pageID, id string, archive domain.Change[domain.Audience],
	cancelled func(v *domain.Version) domain.Event) (domain.Audience, error) {
	return s.updateAudience(ctx, tenantID, pageID, id, archive, cancelled)
}

func (s *Store) updateAudience(ctx context.Context, tenantID, pageID, id string, change domain.Change[domain.Audience],
	cancelled func(v *domain.Version) domain.Event) (domain.Audience, error) {
	var out domain.Audience
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		a, err := s.getAudience(ctx, tx, tenantID, pageID, id, " FOR UPDATE OF a")
		if err != nil {
			return err
		}
		out = a
		evt, changed, err := change(&a)
		if err != nil || !changed {
			return err
		}
		// The row written is the one locked: change alters the audience, never which it is.
		a.ID, a.TenantID, a.PageID = id, tenantID, pageID
		if err := saveAudience(ctx, tx, &a); err != nil {
			return err
		}
		out = a
		if err := AddEvents(ctx, s.out, tx, tenantID, evt); err != nil || cancelled == nil {
			return err
		}
		if err := s.cancelQueued(ctx, tx, tenantID, id, *a.ArchivedAt, cancelled); err != nil {
			return err
		}
		out, err = s.getAudience(ctx, tx, tenantID, pageID, id, "")
		return err
	})
	return out, err
}

// saveAudience writes an audience's changeable fields within tx.
func saveAudience(ctx context.Context, tx pgx.Tx, a *domain.Audience) error {
	b := &pgx.Batch{}
	if err := queueSaveAudience(b, a); err != nil {
		return err
	}
	return sendWrites(ctx, tx, b, "update audience")
}

// queueSaveAudience queues, in b, the write of an audience's changeable fields.
func queueSaveAudience(b *pgx.Batch, a *domain.Audience) error {
	override, err := jsonb(a.MetadataOverride)
	if err != nil {
		return err
	}
	var latest, published *string
	if a.LatestVersion != nil {
		latest = &a.LatestVersion.ID
	}
	if a.PublishedVersion != nil {
		published = &a.PublishedVersion.ID
	}
	b.Queue(`UPDATE audiences SET custom_name = $3, status = $4, action_form_id_override = $5,
		action_form_instructions_override = $6, action_url_override = $7, supplementary_context = $8,
		metadata_override = $9, publish_behavior = $10, latest_version_id = $11, published_version_id = $12,
		updated_at = $13, archived_at = $14 WHERE tenant_id = $1 AND id = $2`,
		a.TenantID, a.ID, a.CustomName, a.Status, a.ActionFormIDOverride, a.ActionFormInstructionsOverride,
		a.ActionURLOverride, a.SupplementaryContext, override, a.PublishBehavior, latest, published, a.UpdatedAt, a.ArchivedAt)
	return nil
}

// cancelQueued cancels the audience's versions that have not started processing, in
// version order, each announced by cancelled.
func (s *Store) cancelQueued(ctx context.Context, tx pgx.Tx, tenantID, audienceID string, now time.Time,
	cancelled func(v *domain.Version) domain.Event) error {
	rows, err := tx.Query(ctx, `UPDATE audience_versions SET status = 'cancelled', cancelled_at = $3
		WHERE tenant_id = $1 AND id IN (SELECT id FROM audience_versions
			WHERE tenant_id = $1 AND audience_id = $2 AND status = 'queued' FOR UPDATE SKIP LOCKED)
		RETURNING `+versionCols, tenantID, audienceID, now)
	if err != nil {
		return fmt.Errorf("cancel queued versions: %w", err)
	}
	vs, err := collectVersions(rows)
	if err != nil {
		return fmt.Errorf("cancel queued versions: %w", err)
	}
	// In version order, as the worker would have finished them.
	sort.Slice(vs, func(i, j int) bool { return vs[i].VersionNumber < vs[j].VersionNumber })
	evts := make([]domain.Event, len(vs))
	for i := range vs {
		evts[i] = cancelled(&vs[i])
	}
	return AddEvents(ctx, s.out, tx, tenantID, evts...)
}

// CreateVersion queues a new version of an audience, which evt announces. With an
// operation key already used for the audience it returns that version and created
// false; the audience row lock serialises concurrent requests, and a unique index backs
// it. An archived audience (ErrAudienceArchived) or page (ErrPageArchived) takes no new
// version.
func (s *Store) CreateVersion(ctx context.Context, v domain.Version, evt domain.Event) (domain.Version, bool, error) {
	var out domain.Version
	created := false
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		// The reads go out together: the audience's lock first, then, each statement with
		// a snapshot taken after it, the next version number and the operation key's version.
		b := &pgx.Batch{}
		var a versionTarget
		b.Queue(`SELECT a.archived_at, a.publish_behavior, a.supplementary_context, a.is_new_page_agent, p.status`+
			audienceFrom+` WHERE a.tenant_id = $1 AND a.page_id = $2 AND a.id = $3 FOR UPDATE OF a`,
			v.TenantID, v.PageID, v.AudienceID).QueryRow(func(r pgx.Row) error {
			err := r.Scan(&a.archivedAt, &a.publishBehavior, &a.supplementaryContext, &a.isNewPageAgent, &a.pageStatus)
			return optionalRow(err, &a.found, "lock audience")
		})
		b.Queue(`SELECT coalesce(max(version_number), 0) + 1 FROM audience_versions WHERE tenant_id = $1 AND audience_id = $2`,
			v.TenantID, v.AudienceID).QueryRow(func(r pgx.Row) error {
			return wrapErr(r.Scan(&v.VersionNumber), "number version")
		})
		var old domain.Version
		keyUsed := false
		if v.OperationKey != nil {
			b.Queue("SELECT "+versionCols+` FROM audience_versions WHERE tenant_id = $1 AND audience_id = $2 AND operation_key = $3`,
				v.TenantID, v.AudienceID, *v.OperationKey).QueryRow(func(r pgx.Row) error {
				var err error
				old, err = scanVersion(r)
				return optionalRow(err, &keyUsed, "look up operation key")
			})
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		switch {
		case !a.found:
			return s.missingAudience(ctx, tx, v.TenantID, v.PageID)
		case keyUsed:
			out = old
			return nil
		case a.archivedAt != nil:
			return domain.ErrAudienceArchived
		case a.pageStatus == domain.PageArchived:
			// An archived page publishes nothing new until it is restored (as for new audiences).
			return domain.ErrPageArchived
		}
		v.PublishOnComplete = a.publishBehavior == domain.BehaviorPublish
		v.SupplementaryContext = a.supplementaryContext
		v.IsNewPageAgent = a.isNewPageAgent
		b = &pgx.Batch{}
		if err := s.queueVersion(ctx, b, v, evt); err != nil {
			return err
		}
		if err := sendWrites(ctx, tx, b, "store version"); err != nil {
			return err
		}
		out, created = v, true
		return nil
	})
	return out, created, err
}

// versionTarget is what a new version takes from its audience and page.
type versionTarget struct {
	found                bool
	archivedAt           *time.Time
	publishBehavior      string
	supplementaryContext *string
	isNewPageAgent       bool
	pageStatus           string
}

// wrapErr wraps a non-nil err with what failed.
func wrapErr(err error, what string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// ListVersions returns up to limit versions of an audience, newest first, below the
// version number (0: from the newest), and their count.
func (s *Store) ListVersions(ctx context.Context, tenantID, pageID, audienceID string, below int64, limit int) ([]domain.Version, int64, error) {
	var total int64
	var exists bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1`+audienceFrom+` WHERE a.tenant_id = $1 AND a.page_id = $2 AND a.id = $3),
		(SELECT count(*) FROM audience_versions WHERE tenant_id = $1 AND audience_id = $3)`,
		tenantID, pageID, audienceID).Scan(&exists, &total)
	if err != nil {
		return nil, 0, fmt.Errorf("count versions: %w", err)
	}
	if !exists {
		return nil, 0, s.missingAudience(ctx, s.pool, tenantID, pageID)
	}
	if below <= 0 {
		below = 1 << 53
	}
	rows, err := s.pool.Query(ctx, "SELECT "+versionCols+` FROM audience_versions WHERE tenant_id = $1 AND audience_id = $2
		AND version_number < $3 ORDER BY version_number DESC LIMIT $4`, tenantID, audienceID, below, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("list versions: %w", err)
	}
	out, err := collectVersions(rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list versions: %w", err)
	}
	return out, total, nil
}
