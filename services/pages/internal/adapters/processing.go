package adapters

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

// claimSQL takes the oldest version that is queued, or processing with an expired lease
// ($1 is now), whose audience has no earlier unfinished version, and, unless it used up
// its attempts ($3, domain.MaxAttempts: domain.GiveUp would cancel it), leases it until
// $2 and marks its audience processing if it is the audience's latest. One statement, so
// one round trip and one implicit transaction, whether it finds a version or not (at low
// rates about half the claims find none: each drain of the worker ends with one). It
// returns the version found and the attempts of its lease, NULL when it was left for the
// give-up.
const claimSQL = `
	WITH c AS (
		SELECT v.tenant_id, v.id, v.page_id, v.audience_id, v.attempts FROM audience_versions v
		WHERE (v.status = 'queued' OR (v.status = 'processing' AND v.lease_until < $1))
		  AND NOT EXISTS (SELECT 1 FROM audience_versions o WHERE o.tenant_id = v.tenant_id
		      AND o.audience_id = v.audience_id AND o.status IN ('queued', 'processing')
		      AND o.version_number < v.version_number)
		ORDER BY v.queued_at, v.id LIMIT 1 FOR UPDATE OF v SKIP LOCKED
	), leased AS (
		UPDATE audience_versions v SET status = 'processing', attempts = v.attempts + 1,
			lease_until = $2, processing_at = coalesce(v.processing_at, $1),
			queue_duration_ms = coalesce(v.queue_duration_ms, greatest(0, extract(epoch FROM ($1 - v.queued_at)) * 1000))
		FROM c WHERE v.tenant_id = c.tenant_id AND v.id = c.id AND c.attempts < $3
		RETURNING v.attempts
	), marked AS (
		UPDATE audiences a SET status = 'processing' FROM c, leased
		WHERE a.tenant_id = c.tenant_id AND a.id = c.audience_id AND a.latest_version_id = c.id AND a.archived_at IS NULL
	)
	SELECT c.tenant_id, c.id, c.page_id, c.audience_id, (SELECT attempts FROM leased) FROM c`

// Claim takes the oldest version that is queued, or processing with an expired lease
// (its worker died), and leases it until now+lease. Versions of one audience are
// processed one after another (a later one waits until the earlier ones are done), and
// SKIP LOCKED lets several replicas claim different versions at the same time. A
// version that used up its attempts is cancelled instead (domain.ErrGaveUp).
func (s *Store) Claim(ctx context.Context, now time.Time, lease time.Duration) (domain.Claim, error) {
	var c domain.Claim
	var attempts *int
	err := s.pool.QueryRow(ctx, claimSQL, now, now.Add(lease), domain.MaxAttempts).
		Scan(&c.TenantID, &c.VersionID, &c.PageID, &c.AudienceID, &attempts)
	if postgres.IsNoRows(err) {
		return domain.Claim{}, domain.ErrNothingToProcess
	}
	if err != nil {
		return domain.Claim{}, fmt.Errorf("claim version: %w", err)
	}
	if attempts == nil {
		return domain.Claim{}, s.giveUp(ctx, c, now)
	}
	c.Attempts = *attempts
	return c, nil
}

// giveUp cancels the version of c, found by the claim with its attempts used up
// (domain.GiveUp), with its page.version.processed event, unless another worker took it
// meanwhile; it returns domain.ErrGaveUp either way, so the worker looks for the next
// version.
func (s *Store) giveUp(ctx context.Context, c domain.Claim, now time.Time) error {
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		v, err := scanVersion(tx.QueryRow(ctx, "SELECT "+versionCols+` FROM audience_versions
			WHERE tenant_id = $1 AND id = $2 AND (status = 'queued' OR (status = 'processing' AND lease_until < $3))
			FOR UPDATE SKIP LOCKED`, c.TenantID, c.VersionID, now))
		if postgres.IsNoRows(err) {
			return nil // taken by another worker since the claim
		}
		if err != nil {
			return fmt.Errorf("load version to give up: %w", err)
		}
		v, announce, gaveUp := domain.GiveUp(v, now)
		if !gaveUp {
			return nil
		}
		b := &pgx.Batch{}
		if err := queueFinished(b, &v); err != nil {
			return err
		}
		b.Queue(`UPDATE audiences SET status = 'cancelled', updated_at = $4
			WHERE tenant_id = $1 AND id = $2 AND latest_version_id = $3 AND archived_at IS NULL`,
			v.TenantID, v.AudienceID, v.ID, now)
		if err := s.queueEvents(ctx, b, v.TenantID, announce...); err != nil {
			return err
		}
		return sendWrites(ctx, tx, b, "cancel version")
	})
	if err != nil {
		return err
	}
	return domain.ErrGaveUp
}

// Finish completes a claimed version in one transaction: it loads the version, its page
// and audience and the audience's pending changes, lets domain.Complete decide the
// outcome, and stores that whole with its events. A claim that lost its lease returns
// ErrLeaseLost and changes nothing, so a version is never finished twice. It takes four
// round trips: BEGIN, the reads together, the writes together, COMMIT.
func (s *Store) Finish(ctx context.Context, c domain.Claim, now time.Time) (domain.Version, error) {
	var out domain.Version
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		// The version is locked first, then the audience (the order of the claim's
		// locks); each later read has a snapshot taken after the locks.
		b := &pgx.Batch{}
		var v domain.Version
		var held, pageFound, audienceFound bool
		b.Queue("SELECT "+versionCols+` FROM audience_versions
			WHERE tenant_id = $1 AND id = $2 AND status = 'processing' AND attempts = $3 FOR UPDATE`,
			c.TenantID, c.VersionID, c.Attempts).QueryRow(func(r pgx.Row) error {
			var err error
			v, err = scanVersion(r)
			return optionalRow(err, &held, "load claimed version")
		})
		// The page and the audience are read as the claim names them, the audience even
		// when its page was deleted meanwhile. A missing row is told after the batch: the
		// version's as a lost lease, the page's or the audience's as an error.
		var pageTitle, pageContext string
		b.Queue("SELECT title, page_context FROM pages WHERE tenant_id = $1 AND id = $2", c.TenantID, c.PageID).
			QueryRow(func(r pgx.Row) error { return optionalRow(r.Scan(&pageTitle, &pageContext), &pageFound, "load page") })
		var a audienceRow
		b.Queue("SELECT "+audienceCols+` FROM audiences a JOIN pages p ON p.tenant_id = a.tenant_id AND p.id = a.page_id
			WHERE a.tenant_id = $1 AND a.id = $2 FOR UPDATE OF a`, c.TenantID, c.AudienceID).
			QueryRow(func(r pgx.Row) error {
				var err error
				a, err = scanAudience(r)
				return optionalRow(err, &audienceFound, "load audience")
			})
		var versions []domain.Version
		b.Queue("SELECT "+versionCols+` FROM audience_versions WHERE tenant_id = $1 AND id IN
			(SELECT unnest(ARRAY[latest_version_id, published_version_id]) FROM audiences WHERE tenant_id = $1 AND id = $2)`,
			c.TenantID, c.AudienceID).Query(func(r pgx.Rows) error {
			var err error
			versions, err = collectVersions(r)
			return wrapErr(err, "load versions")
		})
		var pending []domain.ContextChange
		b.Queue("SELECT "+changeCols+` FROM audience_changes
			WHERE tenant_id = $1 AND audience_id = $2 AND applied_version_id IS NULL ORDER BY id`, c.TenantID, c.AudienceID).
			Query(func(r pgx.Rows) error {
				var err error
				pending, err = collectChanges(r, nil)
				return wrapErr(err, "load pending changes")
			})
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if !held {
			return domain.ErrLeaseLost
		}
		if !pageFound || !audienceFound || v.PageID != c.PageID || v.AudienceID != c.AudienceID {
			return fmt.Errorf("claim of version %s names page %s and audience %s, which it is not of or which are gone",
				c.VersionID, c.PageID, c.AudienceID)
		}
		audience := withVersions(a, versionsByID(versions))
		if audience.ArchivedAt != nil {
			pending = nil
		}
		done := domain.Complete(v, audience, pageTitle, pageContext, pending, now)
		b = &pgx.Batch{}
		if err := s.queueCompletion(ctx, b, done, now); err != nil {
			return err
		}
		if err := sendWrites(ctx, tx, b, "store finished version"); err != nil {
			return err
		}
		out = done.Version
		return nil
	})
	return out, err
}

// queueCompletion queues, in b, the writes of what domain.Complete decided, with its
// events.
func (s *Store) queueCompletion(ctx context.Context, b *pgx.Batch, done domain.Completion, now time.Time) error {
	v := done.Version
	if len(done.Applied) > 0 {
		b.Queue(`UPDATE audience_changes SET applied_version_id = $3 WHERE tenant_id = $1 AND id = ANY($2)`,
			v.TenantID, done.Applied, v.ID)
		b.Queue(`UPDATE audience_messages SET has_snapshot = true WHERE tenant_id = $1 AND id IN
			(SELECT message_id FROM audience_changes WHERE tenant_id = $1 AND id = ANY($2))`, v.TenantID, done.Applied)
	}
	if done.Superseded != nil {
		b.Queue(`UPDATE audience_versions SET status = 'archived', obsolete_at = $3, archived_at = $3
			WHERE tenant_id = $1 AND id = $2`, v.TenantID, *done.Superseded, now)
	}
	if done.Published {
		b.Queue(`UPDATE audience_conversations SET updated_at = $3, published_message_id =
			(SELECT max(id) FROM audience_messages WHERE tenant_id = $1 AND audience_id = $2)
			WHERE tenant_id = $1 AND audience_id = $2`, v.TenantID, v.AudienceID, now)
	}
	if err := queueFinished(b, &v); err != nil {
		return err
	}
	if done.Audience != nil {
		if err := queueSaveAudience(b, done.Audience); err != nil {
			return err
		}
	}
	return s.queueEvents(ctx, b, v.TenantID, done.Events...)
}

// queueFinished queues, in b, the write of a processed version's final state, which
// releases its lease.
func queueFinished(b *pgx.Batch, v *domain.Version) error {
	snap, err := jsonb(v.Snapshot)
	if err != nil {
		return err
	}
	b.Queue(`UPDATE audience_versions SET status = $3, snapshot = $4, supplementary_context = $5,
		became_draft_at = $6, published_at = $7, cancelled_at = $8, lease_until = NULL
		WHERE tenant_id = $1 AND id = $2`, v.TenantID, v.ID, v.Status, snap, v.SupplementaryContext,
		v.BecameDraftAt, v.PublishedAt, v.CancelledAt)
	return nil
}

// optionalRow reads the error of a row that may be missing: it sets found when the row
// was read, ignores pgx.ErrNoRows (the caller decides what a missing row means), and
// wraps any other error with what failed.
func optionalRow(err error, found *bool, what string) error {
	if postgres.IsNoRows(err) {
		return nil
	}
	*found = err == nil
	return wrapErr(err, what)
}
