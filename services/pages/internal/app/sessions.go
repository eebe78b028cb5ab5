package app

import (
	"context"

	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

// TypeID prefixes of a session and its form submission.
const (
	sessionPrefix = "session"
	formPrefix    = "formsub"
)

// Sessions runs the audience session use cases.
type Sessions struct {
	Store domain.SessionRepository
	// Clock tells the time (the system clock when nil).
	Clock timestamp.Clock
	// Recorded is called after a new session was stored, to wake the computation worker
	// (SessionWorker.Poke); nil calls nothing.
	Recorded func()
}

// Record stores a session the caller has checked (domain.Session.Check): it gets its
// IDs and recording time, its form submission's identifier (domain.Identify), and
// counts as a conversion when it has a form submission, which it announces
// (form.submitted). A replay of a recorded session returns that session with replayed
// true (domain.SessionRepository.Record).
func (s *Sessions) Record(ctx context.Context, in domain.Session) (domain.Session, bool, error) {
	now := s.Clock.Now()
	in.ID, in.CreatedAt = ids.New(sessionPrefix), now
	var announce []domain.Event
	if in.Form != nil {
		f := *in.Form
		f.ID, f.SubmittedAt = ids.New(formPrefix), now
		f.Identifier, f.IdentifierType, _ = domain.Identify(f)
		in.Form, in.HasConversion = &f, true
		announce = append(announce, domain.FormSubmitted(&in))
	}
	out, replayed, err := s.Store.Record(ctx, in, announce)
	if err != nil {
		return out, false, err
	}
	if !replayed && s.Recorded != nil {
		s.Recorded()
	}
	return out, replayed, nil
}

// Get returns a session of a visible page.
func (s *Sessions) Get(ctx context.Context, tenantID, pageID, id string) (domain.Session, error) {
	return s.Store.Get(ctx, tenantID, pageID, id)
}

// List returns a page of a visible page's sessions, newest first, and how many match f.
func (s *Sessions) List(ctx context.Context, tenantID, pageID string, f domain.SessionFilter, after *domain.SessionAfter,
	limit int) ([]domain.Session, int64, error) {
	return s.Store.List(ctx, tenantID, pageID, f, after, limit)
}
