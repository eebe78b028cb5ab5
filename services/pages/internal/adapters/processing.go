package adapters

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

// Claim takes the oldest version that is queued, or processing with an expired lease
// (its worker died), and leases it until now+lease. Versions of one audience are
// processed one after another (a later one waits until the earlier ones are done), and
// SKIP LOCKED lets several replicas claim different versions at the same time.
func (s *Store) Claim(ctx context.Context, now time.Time, lease time.Duration) (domain.Claim, error) {
	var c domain.Claim
	gaveUp := false
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var audienceID string
		err := tx.QueryRow(ctx, `SELECT v.tenant_id, v.id, v.audience_id FROM audience_versions v
			WHERE (v.status = 'queued' OR (v.status = 'processing' AND v.lease_until < $1))
			  AND NOT EXISTS (SELECT 1 FROM audience_versions o WHERE o.tenant_id = v.tenant_id
			      AND o.audience_id = v.audience_id AND o.status IN ('queued', 'processing')
			      AND o.version_number < v.version_number)
			ORDER BY v.queued_at, v.id LIMIT 1 FOR UPDATE OF v SKIP LOCKED`, now).Scan(&c.TenantID, &c.VersionID, &audienceID)
		if postgres.IsNoRows(err) {
			return domain.ErrNothingToProcess
		}
		if err != nil {
			return fmt.Errorf("claim version: %w", err)
		}
		if gaveUp, err = s.giveUpIfExhausted(ctx, tx, c, audienceID, now); err != nil || gaveUp {
			return err
		}
		err = tx.QueryRow(ctx, `UPDATE audience_versions SET status = 'processing', attempts = attempts + 1,
			lease_until = $3, processing_at = coalesce(processing_at, $4),
			queue_duration_ms = coalesce(queue_duration_ms, greatest(0, extract(epoch FROM ($4 - queued_at)) * 1000))
			WHERE tenant_id = $1 AND id = $2 RETURNING attempts`, c.TenantID, c.VersionID, now.Add(lease), now).Scan(&c.Attempts)
		if err != nil {
			return fmt.Errorf("lease version: %w", err)
		}
		_, err = tx.Exec(ctx, `UPDATE audiences SET status = 'processing'
			WHERE tenant_id = $1 AND id = $2 AND latest_version_id = $3 AND archived_at IS NULL`, c.TenantID, audienceID, c.VersionID)
		if err != nil {
			return fmt.Errorf("mark audience processing: %w", err)
		}
		return nil
	})
	if err == nil && gaveUp {
		return domain.Claim{}, domain.ErrGaveUp
	}
	return c, err
}

// giveUpIfExhausted cancels a version that used up its attempts (domain.GiveUp), with
// its page.version.processed event, and reports whether it did.
func (s *Store) giveUpIfExhausted(ctx context.Context, tx pgx.Tx, c domain.Claim, audienceID string, now time.Time) (bool, error) {
	v, err := scanVersion(tx.QueryRow(ctx, "SELECT "+versionCols+" FROM audience_versions WHERE tenant_id = $1 AND id = $2",
		c.TenantID, c.VersionID))
	if err != nil {
		return false, fmt.Errorf("load claimed version: %w", err)
	}
	v, announce, gaveUp := domain.GiveUp(v, now)
	if !gaveUp {
		return false, nil
	}
	if err := storeFinished(ctx, tx, &v); err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, `UPDATE audiences SET status = 'cancelled', updated_at = $4
		WHERE tenant_id = $1 AND id = $2 AND latest_version_id = $3 AND archived_at IS NULL`,
		c.TenantID, audienceID, c.VersionID, now); err != nil {
		return false, fmt.Errorf("mark audience cancelled: %w", err)
	}
	return true, s.emitAll(ctx, tx, c.TenantID, announce)
}

// Finish completes a claimed version in one transaction: it loads the version, its page
// and audience and the audience's pending changes, lets domain.Complete decide the
// outcome, and stores that whole with its events. A claim that lost its lease returns
// ErrLeaseLost and changes nothing, so a version is never finished twice.
func (s *Store) Finish(ctx context.Context, c domain.Claim, now time.Time) (domain.Version, error) {
	var out domain.Version
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		v, err := scanVersion(tx.QueryRow(ctx, "SELECT "+versionCols+` FROM audience_versions
			WHERE tenant_id = $1 AND id = $2 AND status = 'processing' AND attempts = $3 FOR UPDATE`,
			c.TenantID, c.VersionID, c.Attempts))
		if postgres.IsNoRows(err) {
			return domain.ErrLeaseLost
		}
		if err != nil {
			return fmt.Errorf("load claimed version: %w", err)
		}
		var pageTitle, pageContext string
		if err := tx.QueryRow(ctx, "SELECT title, page_context FROM pages WHERE tenant_id = $1 AND id = $2",
			v.TenantID, v.PageID).Scan(&pageTitle, &pageContext); err != nil {
			return fmt.Errorf("load page: %w", err)
		}
		a, err := s.getAudience(ctx, tx, v.TenantID, v.PageID, v.AudienceID, " FOR UPDATE OF a")
		if err != nil {
			// The page was deleted meanwhile: read the audience regardless of it.
			a, err = s.audienceIgnoringPage(ctx, tx, v.TenantID, v.AudienceID)
			if err != nil {
				return err
			}
		}
		var pending []domain.Change
		if a.ArchivedAt == nil {
			if pending, err = pendingChanges(ctx, tx, a.TenantID, a.ID); err != nil {
				return err
			}
		}
		done := domain.Complete(v, a, pageTitle, pageContext, pending, now)
		if err := storeCompletion(ctx, tx, done, now); err != nil {
			return err
		}
		out = done.Version
		return s.emitAll(ctx, tx, v.TenantID, done.Events)
	})
	return out, err
}

// storeCompletion stores what domain.Complete decided.
func storeCompletion(ctx context.Context, tx pgx.Tx, done domain.Completion, now time.Time) error {
	v := done.Version
	if err := markApplied(ctx, tx, v.TenantID, done.Applied, v.ID); err != nil {
		return err
	}
	if done.Superseded != nil {
		if _, err := tx.Exec(ctx, `UPDATE audience_versions SET status = 'archived', obsolete_at = $3, archived_at = $3
			WHERE tenant_id = $1 AND id = $2`, v.TenantID, *done.Superseded, now); err != nil {
			return fmt.Errorf("supersede version: %w", err)
		}
	}
	if done.Published {
		if _, err := tx.Exec(ctx, `UPDATE audience_conversations SET updated_at = $3, published_message_id =
			(SELECT max(id) FROM audience_messages WHERE tenant_id = $1 AND audience_id = $2)
			WHERE tenant_id = $1 AND audience_id = $2`, v.TenantID, v.AudienceID, now); err != nil {
			return fmt.Errorf("mark published message: %w", err)
		}
	}
	if err := storeFinished(ctx, tx, &v); err != nil {
		return err
	}
	if done.Audience != nil {
		return saveAudience(ctx, tx, done.Audience)
	}
	return nil
}

// emitAll stores events in the outbox within tx, in order.
func (s *Store) emitAll(ctx context.Context, tx pgx.Tx, tenantID string, evts []domain.Event) error {
	for _, e := range evts {
		if err := s.emit(ctx, tx, tenantID, e.Type, e.Subject, e.Payload); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) audienceIgnoringPage(ctx context.Context, tx pgx.Tx, tenantID, id string) (domain.Audience, error) {
	a, err := scanAudience(tx.QueryRow(ctx, "SELECT "+audienceCols+` FROM audiences a JOIN pages p
		ON p.tenant_id = a.tenant_id AND p.id = a.page_id WHERE a.tenant_id = $1 AND a.id = $2 FOR UPDATE OF a`, tenantID, id))
	if err != nil {
		return domain.Audience{}, fmt.Errorf("load audience %s: %w", id, err)
	}
	out, err := attachVersions(ctx, tx, tenantID, []audienceRow{a})
	if err != nil {
		return domain.Audience{}, err
	}
	return out[0], nil
}

// storeFinished writes the final state of a processed version and releases its lease.
func storeFinished(ctx context.Context, tx pgx.Tx, v *domain.Version) error {
	snap, err := jsonb(v.Snapshot)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE audience_versions SET status = $3, snapshot = $4, supplementary_context = $5,
		became_draft_at = $6, published_at = $7, cancelled_at = $8, lease_until = NULL
		WHERE tenant_id = $1 AND id = $2`, v.TenantID, v.ID, v.Status, snap, v.SupplementaryContext,
		v.BecameDraftAt, v.PublishedAt, v.CancelledAt)
	if err != nil {
		return fmt.Errorf("finish version: %w", err)
	}
	return nil
}

// markApplied marks the changes applied by the version and their messages as having a
// snapshot.
func markApplied(ctx context.Context, tx pgx.Tx, tenantID string, applied []string, versionID string) error {
	if len(applied) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE audience_changes SET applied_version_id = $3 WHERE tenant_id = $1 AND id = ANY($2)`,
		tenantID, applied, versionID); err != nil {
		return fmt.Errorf("mark changes applied: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE audience_messages SET has_snapshot = true WHERE tenant_id = $1 AND id IN
		(SELECT message_id FROM audience_changes WHERE tenant_id = $1 AND id = ANY($2))`, tenantID, applied); err != nil {
		return fmt.Errorf("mark messages: %w", err)
	}
	return nil
}
