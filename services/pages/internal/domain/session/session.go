// Package session holds the audience sessions' types, rules and events: recorded visits
// to a page, their form submissions and derived metrics.
package session

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/customerapi/platform/libs/errkind"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

// Computation states of a session's derived metrics.
const (
	ComputationPending   = "pending"
	ComputationCompleted = "completed"
	ComputationFailed    = "failed"
)

// Errors of the audience sessions, those of a kind (libs/errkind) with their answer's
// detail (a missing page or audience is domain.ErrPageNotFound or
// domain.ErrAudienceNotFound, as everywhere in the service).
var (
	ErrNotFound       = errkind.NotFound.New("audience session not found")
	ErrReplayConflict = errkind.Conflict.New(
		"this page already has a session with this analyticsSessionId, recorded with a different body")
	ErrEndBeforeStart = errors.New("endDate must not be before startDate")
)

// Session is one recorded visit to a page (and usually one of its audiences).
type Session struct {
	TenantID           string
	ID                 string
	PageID             string
	AudienceID         *string
	AnalyticsSessionID string
	RequestHash        []byte
	PageTitle          *string
	PageURL            *string
	StartedAt          time.Time
	EndedAt            *time.Time
	HasConversion      bool
	MaxScrollDepth     *float64
	QuestionsAsked     int64
	TotalClicks        int64
	UTM                UTM
	Form               *FormSubmission
	// Derived by the computation.
	ComputationStatus string
	ComputationError  *string
	IsBounce          bool
	TimeSpentSeconds  *float64
	CreatedAt         time.Time
}

// UTM holds the campaign parameters of the visit.
type UTM struct {
	Campaign, Content, Medium, Source, Term *string
}

// FormSubmitted announces a session's form submission (form.submitted). Its subject (the
// Kafka key) is the audience, so a session's event is ordered with its audience's
// version events; a session without an audience is keyed by its page.
func FormSubmitted(s *Session) domain.Event {
	f := s.Form
	subject := s.PageID
	if s.AudienceID != nil {
		subject = *s.AudienceID
	}
	return domain.Event{Type: events.TypeFormSubmitted, Subject: subject, Payload: events.FormSubmitted{
		Type: events.TypeFormSubmitted, PageID: s.PageID, AudienceID: s.AudienceID, AudienceSessionID: s.ID,
		FormSubmissionID: f.ID, Identifier: f.Identifier, IdentifierType: f.IdentifierType, Email: f.Email,
		Phone: f.Phone, LinkedinProfileURL: f.LinkedInURL, Name: f.Name, Fields: f.Fields,
		SubmittedAt: timestamp.Format(f.SubmittedAt)}}
}

// Filter narrows a session list. Start and End bound sessionStartedAt, inclusive.
type Filter struct {
	Start, End *time.Time
	AudienceID string
}

// Check reports ErrEndBeforeStart when the filter's end is before its start.
func (f Filter) Check() error {
	if f.Start != nil && f.End != nil && f.End.Before(*f.Start) {
		return ErrEndBeforeStart
	}
	return nil
}

// After is a keyset position in the newest-first order of sessions: the last
// item's start and ID.
type After struct {
	StartedAt time.Time
	ID        string
}

// Keys renders a position for a cursor.
func (a After) Keys() []string {
	return []string{strconv.FormatInt(a.StartedAt.UnixMicro(), 10), a.ID}
}

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

// Repository is the storage of audience sessions. It sees the pages and audiences
// only to check that they exist (domain.ErrPageNotFound, domain.ErrAudienceNotFound).
type Repository interface {
	// Record stores a new session with the event it announces (none when zero), in one
	// transaction. A session whose analyticsSessionId the page already has is a replay:
	// with the same request hash the stored session is returned (replayed true) and
	// nothing is announced, with another it is ErrReplayConflict.
	Record(ctx context.Context, s Session, evt domain.Event) (out Session, replayed bool, err error)
	// Get returns a session of a visible page (ErrNotFound).
	Get(ctx context.Context, tenantID, pageID, id string) (Session, error)
	// List returns up to limit sessions of a visible page after the position, newest
	// sessionStartedAt first, and the number of sessions matching the filter.
	List(ctx context.Context, tenantID, pageID string, f Filter, after *After, limit int) ([]Session, int64, error)
}

// Queue is the sessions whose metrics wait to be computed.
type Queue interface {
	// ComputePending claims up to n pending sessions, computes their metrics by m and
	// stores the results in one transaction; several replicas may call it at once.
	ComputePending(ctx context.Context, m Metrics, n int, now time.Time) (Computed, error)
}
