// Package sessions stores the audience sessions in PostgreSQL and computes their pending
// metrics there.
package sessions

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/pages/internal/adapters"
	"github.com/customerapi/platform/services/pages/internal/domain"
	"github.com/customerapi/platform/services/pages/internal/domain/session"
)

// Store keeps audience sessions in PostgreSQL (session.Repository and session.Queue). It
// reads the pages and audiences tables only through the service's existence checks
// (adapters.CheckPage, adapters.PageOfAudience).
type Store struct {
	pool *pgxpool.Pool
	out  outbox.Writer
}

// NewStore returns a Store on pool that writes its events through out.
func NewStore(pool *pgxpool.Pool, out outbox.Writer) *Store { return &Store{pool: pool, out: out} }

const sessionCols = `id, tenant_id, page_id, audience_id, analytics_session_id, request_hash, page_title, page_url,
	session_started_at, session_ended_at, has_conversion, max_scroll_depth_percentage, questions_asked_count,
	total_clicks_count, utm_campaign, utm_content, utm_medium, utm_source, utm_term,
	form_submission_id, form_submission_email, form_submission_phone, form_submission_linkedin_url,
	form_submission_name, form_submission_fields, form_submission_identifier, form_submission_identifier_type,
	form_submitted_at, computation_status, computation_error, is_bounce, time_spent_seconds, created_at`

func scanSession(r pgx.Row) (session.Session, error) {
	var (
		s                                              session.Session
		formID, email, phone, linkedin, name, ident, k *string
		fields                                         map[string]any
		submittedAt                                    *time.Time
	)
	err := r.Scan(&s.ID, &s.TenantID, &s.PageID, &s.AudienceID, &s.AnalyticsSessionID, &s.RequestHash, &s.PageTitle,
		&s.PageURL, &s.StartedAt, &s.EndedAt, &s.HasConversion, &s.MaxScrollDepth, &s.QuestionsAsked, &s.TotalClicks,
		&s.UTM.Campaign, &s.UTM.Content, &s.UTM.Medium, &s.UTM.Source, &s.UTM.Term,
		&formID, &email, &phone, &linkedin, &name, &fields, &ident, &k, &submittedAt,
		&s.ComputationStatus, &s.ComputationError, &s.IsBounce, &s.TimeSpentSeconds, &s.CreatedAt)
	if err != nil {
		return session.Session{}, err
	}
	if formID != nil {
		f := &session.FormSubmission{ID: *formID, Email: email, Phone: phone, LinkedInURL: linkedin, Name: name, Fields: fields}
		if ident != nil && k != nil {
			f.Identifier, f.IdentifierType = *ident, *k
		}
		if submittedAt != nil {
			f.SubmittedAt = *submittedAt
		}
		s.Form = f
	}
	return s, nil
}

func collectSessions(rows pgx.Rows) ([]session.Session, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (session.Session, error) { return scanSession(r) })
}

// Record stores a new session, pending computation, and the event it announces (none
// when zero), in one transaction. A session whose analyticsSessionId the page already
// has is a replay: with the same request hash the stored session is returned (replayed
// true) and nothing is announced, with another it is session.ErrReplayConflict.
func (st *Store) Record(ctx context.Context, s session.Session, evt domain.Event) (out session.Session, replayed bool, err error) {
	err = postgres.InTx(ctx, st.pool, func(tx pgx.Tx) error {
		if err := adapters.CheckPage(ctx, tx, s.TenantID, s.PageID); err != nil {
			return err
		}
		if s.AudienceID != nil {
			if _, err := adapters.PageOfAudience(ctx, tx, s.TenantID, *s.AudienceID, s.PageID); err != nil {
				return err
			}
		}
		var f session.FormSubmission
		if s.Form != nil {
			f = *s.Form
		}
		var formID, ident, identType *string
		var submittedAt *time.Time
		var fields any // SQL NULL, not JSON null, when there are none
		if f.Fields != nil {
			fields = f.Fields
		}
		if s.Form != nil {
			formID, ident, identType, submittedAt = &f.ID, &f.Identifier, &f.IdentifierType, &f.SubmittedAt
		}
		tag, err := tx.Exec(ctx, `INSERT INTO audience_sessions (`+sessionCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
				$23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33)
			ON CONFLICT (tenant_id, page_id, analytics_session_id) DO NOTHING`,
			s.ID, s.TenantID, s.PageID, s.AudienceID, s.AnalyticsSessionID, s.RequestHash, s.PageTitle, s.PageURL,
			s.StartedAt, s.EndedAt, s.HasConversion, s.MaxScrollDepth, s.QuestionsAsked, s.TotalClicks,
			s.UTM.Campaign, s.UTM.Content, s.UTM.Medium, s.UTM.Source, s.UTM.Term,
			formID, f.Email, f.Phone, f.LinkedInURL, f.Name, fields, ident, identType, submittedAt,
			session.ComputationPending, nil, false, nil, s.CreatedAt)
		if err != nil {
			return fmt.Errorf("insert session: %w", err)
		}
		if tag.RowsAffected() == 0 {
			prev, err := scanSession(tx.QueryRow(ctx, `SELECT `+sessionCols+` FROM audience_sessions
				WHERE tenant_id = $1 AND page_id = $2 AND analytics_session_id = $3`, s.TenantID, s.PageID, s.AnalyticsSessionID))
			if err != nil {
				return fmt.Errorf("load recorded session: %w", err)
			}
			if !bytes.Equal(prev.RequestHash, s.RequestHash) {
				return session.ErrReplayConflict
			}
			out, replayed = prev, true
			return nil
		}
		if err := adapters.AddEvents(ctx, st.out, tx, s.TenantID, evt); err != nil {
			return err
		}
		out = s
		out.ComputationStatus = session.ComputationPending
		return nil
	})
	return out, replayed, err
}

// Get returns a session of a visible page.
func (st *Store) Get(ctx context.Context, tenantID, pageID, id string) (session.Session, error) {
	s, err := scanSession(st.pool.QueryRow(ctx, `SELECT `+sessionCols+` FROM audience_sessions s
		WHERE tenant_id = $1 AND page_id = $2 AND id = $3
		AND EXISTS (SELECT 1 FROM pages p WHERE p.tenant_id = s.tenant_id AND p.id = s.page_id AND p.deleted_at IS NULL)`,
		tenantID, pageID, id))
	if postgres.IsNoRows(err) {
		if err := adapters.CheckPage(ctx, st.pool, tenantID, pageID); err != nil {
			return session.Session{}, err
		}
		return session.Session{}, session.ErrNotFound
	}
	if err != nil {
		return session.Session{}, fmt.Errorf("get session: %w", err)
	}
	return s, nil
}

// List returns up to limit sessions of a visible page after the position, newest
// sessionStartedAt first, and the number of sessions matching the filter.
func (st *Store) List(ctx context.Context, tenantID, pageID string, f session.Filter, after *session.After,
	limit int) ([]session.Session, int64, error) {
	if err := adapters.CheckPage(ctx, st.pool, tenantID, pageID); err != nil {
		return nil, 0, err
	}
	// Absent filters are NULL and match everything; each is one fixed SQL text.
	var audience *string
	if f.AudienceID != "" {
		audience = &f.AudienceID
	}
	const where = `tenant_id = $1 AND page_id = $2
		AND ($3::text IS NULL OR audience_id = $3)
		AND ($4::timestamptz IS NULL OR session_started_at >= $4)
		AND ($5::timestamptz IS NULL OR session_started_at <= $5)`
	var afterAt *time.Time
	var afterID *string
	if after != nil {
		afterAt, afterID = &after.StartedAt, &after.ID
	}
	return adapters.ListAndCount(ctx, st.pool, "sessions", scanSession,
		`SELECT `+sessionCols+` FROM audience_sessions WHERE `+where+`
		AND ($6::timestamptz IS NULL OR (session_started_at, id) < ($6, $7::text))
		ORDER BY session_started_at DESC, id DESC LIMIT $8`, []any{tenantID, pageID, audience, f.Start, f.End, afterAt, afterID, limit},
		`SELECT count(*) FROM audience_sessions WHERE `+where, tenantID, pageID, audience, f.Start, f.End)
}
