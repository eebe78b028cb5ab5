package sessions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/pages/internal/adapters"
)

// Store keeps audience sessions in PostgreSQL. It reads the pages and audiences tables
// of the pages service only through the core's existence checks (adapters.CheckPage,
// adapters.PageOfAudience).
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

func scanSession(r pgx.Row) (Session, error) {
	var (
		s                                              Session
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
		return Session{}, err
	}
	if formID != nil {
		f := &FormSubmission{ID: *formID, Email: email, Phone: phone, LinkedInURL: linkedin, Name: name, Fields: fields}
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

// formSubmitted builds the event of a session's form submission. Its subject (the Kafka
// key) is the audience, so a session's event is ordered with its audience's version
// events; a session without an audience is keyed by its page.
func formSubmitted(s Session) (events.Envelope, error) {
	f := s.Form
	p := events.FormSubmitted{Type: events.TypeFormSubmitted, PageID: s.PageID, AudienceID: s.AudienceID,
		AudienceSessionID: s.ID, FormSubmissionID: f.ID, Identifier: f.Identifier, IdentifierType: f.IdentifierType,
		Email: f.Email, Phone: f.Phone, LinkedinProfileURL: f.LinkedInURL, Name: f.Name, Fields: f.Fields,
		SubmittedAt: timestamp.Format(f.SubmittedAt)}
	subject := s.PageID
	if s.AudienceID != nil {
		subject = *s.AudienceID
	}
	return events.New(s.TenantID, events.TypeFormSubmitted, subject, p)
}

// Record stores a new session and, when it has a form submission, its form.submitted
// event, in one transaction. A session whose analyticsSessionId the page already has is
// a replay: with the same request hash the stored session is returned (replayed true),
// with another it is ErrReplayConflict.
func (st *Store) Record(ctx context.Context, s Session) (out Session, replayed bool, err error) {
	err = postgres.InTx(ctx, st.pool, func(tx pgx.Tx) error {
		if err := adapters.CheckPage(ctx, tx, s.TenantID, s.PageID); err != nil {
			return err
		}
		if s.AudienceID != nil {
			if _, err := adapters.PageOfAudience(ctx, tx, s.TenantID, *s.AudienceID, s.PageID); err != nil {
				return err
			}
		}
		var f FormSubmission
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
			StatusPending, nil, false, nil, s.CreatedAt)
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
				return ErrReplayConflict
			}
			out, replayed = prev, true
			return nil
		}
		if s.Form != nil {
			e, err := formSubmitted(s)
			if err != nil {
				return err
			}
			if err := st.out.Add(ctx, tx, events.TopicPages, e); err != nil {
				return err
			}
		}
		out = s
		out.ComputationStatus = StatusPending
		return nil
	})
	return out, replayed, err
}

// Get returns a session of a visible page.
func (st *Store) Get(ctx context.Context, tenantID, pageID, id string) (Session, error) {
	s, err := scanSession(st.pool.QueryRow(ctx, `SELECT `+sessionCols+` FROM audience_sessions s
		WHERE tenant_id = $1 AND page_id = $2 AND id = $3
		AND EXISTS (SELECT 1 FROM pages p WHERE p.tenant_id = s.tenant_id AND p.id = s.page_id AND p.deleted_at IS NULL)`,
		tenantID, pageID, id))
	if postgres.IsNoRows(err) {
		if err := adapters.CheckPage(ctx, st.pool, tenantID, pageID); err != nil {
			return Session{}, err
		}
		return Session{}, ErrSessionNotFound
	}
	if err != nil {
		return Session{}, fmt.Errorf("get session: %w", err)
	}
	return s, nil
}

// Filter narrows a session list. Start and End bound sessionStartedAt, inclusive.
type Filter struct {
	Start, End *time.Time
	AudienceID string
}

// After is a keyset position in the newest-first order: the last item's start and ID.
type After struct {
	StartedAt time.Time
	ID        string
}

// Keys renders a position for a cursor.
func (a After) Keys() []string { return []string{strconv.FormatInt(a.StartedAt.UnixMicro(), 10), a.ID} }

// ParseAfter reads a position from cursor keys; nil keys mean the first page.
func ParseAfter(keys []string) (*After, error) {
	if keys == nil {
		return nil, nil
	}
	if len(keys) != 2 || keys[1] == "" {
		return nil, errors.New("malformed position")
	}
	us, err := strconv.ParseInt(keys[0], 10, 64)
	if err != nil {
		return nil, errors.New("malformed position")
	}
	return &After{StartedAt: time.UnixMicro(us).UTC(), ID: keys[1]}, nil
}

// List returns up to limit sessions of a visible page after the position, newest
// sessionStartedAt first, and the number of sessions matching the filter.
func (st *Store) List(ctx context.Context, tenantID, pageID string, f Filter, after *After, limit int) ([]Session, int64, error) {
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
	b := &pgx.Batch{}
	b.Queue(`SELECT `+sessionCols+` FROM audience_sessions WHERE `+where+`
		AND ($6::timestamptz IS NULL OR (session_started_at, id) < ($6, $7::text))
		ORDER BY session_started_at DESC, id DESC LIMIT $8`,
		tenantID, pageID, audience, f.Start, f.End, afterAt, afterID, limit)
	b.Queue(`SELECT count(*) FROM audience_sessions WHERE `+where, tenantID, pageID, audience, f.Start, f.End)
	br := st.pool.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, 0, fmt.Errorf("list sessions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Session, error) { return scanSession(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("list sessions: %w", err)
	}
	var total int64
	if err := br.QueryRow().Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count sessions: %w", err)
	}
	return out, total, nil
}

// Computed counts the sessions one ComputePending run finished, by outcome.
type Computed struct{ Completed, Failed int }

// Total is the number of sessions finished.
func (c Computed) Total() int { return c.Completed + c.Failed }

// ComputePending claims up to n pending sessions (skipping rows another replica holds),
// computes their metrics and stores the results, all in one transaction: a crash before
// the commit leaves them pending for the next run, and nothing is computed twice.
func (st *Store) ComputePending(ctx context.Context, m Metrics, n int, now time.Time) (Computed, error) {
	var done Computed
	err := postgres.InTx(ctx, st.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+sessionCols+` FROM audience_sessions
			WHERE computation_status = 'pending' ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED`, n)
		if err != nil {
			return fmt.Errorf("claim sessions: %w", err)
		}
		claimed, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Session, error) { return scanSession(r) })
		if err != nil {
			return fmt.Errorf("claim sessions: %w", err)
		}
		if len(claimed) == 0 {
			return nil
		}
		var c Computed
		b := &pgx.Batch{}
		for _, s := range claimed {
			r := m.Compute(s)
			if r.Status == StatusFailed {
				c.Failed++
			} else {
				c.Completed++
			}
			b.Queue(`UPDATE audience_sessions SET computation_status = $3, computation_error = $4, is_bounce = $5,
				time_spent_seconds = $6, has_conversion = $7, computed_at = $8, computation_attempts = computation_attempts + 1
				WHERE tenant_id = $1 AND id = $2`,
				s.TenantID, s.ID, r.Status, r.Error, r.IsBounce, r.TimeSpentSeconds, r.HasConversion, now)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("store metrics: %w", err)
		}
		done = c
		return nil
	})
	return done, err
}
