// Package sessions holds the audience session use cases and the worker that computes
// their derived metrics.
package sessions

import (
	"context"

	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/pages/internal/domain"
	"github.com/customerapi/platform/services/pages/internal/domain/session"
)

// TypeID prefixes of a session and its form submission.
const (
	sessionPrefix = "session"
	formPrefix    = "formsub"
)

// Service runs the audience session use cases.
type Service struct {
	Store session.Repository
	// Clock tells the time (the system clock when nil).
	Clock timestamp.Clock
	// Recorded is called after a new session was stored, to wake the computation worker
	// (Worker.Poke); nil calls nothing.
	Recorded func()
}

// Record stores a session the caller has checked (session.Session.Check): it gets its
// IDs and recording time, its form submission's identifier (session.Identify), and
// counts as a conversion when it has a form submission, which it announces
// (form.submitted). A replay of a recorded session returns that session with replayed
// true (session.Repository.Record).
func (s *Service) Record(ctx context.Context, in session.Session) (session.Session, bool, error) {
	now := s.Clock.Now()
	in.ID, in.CreatedAt = ids.New(sessionPrefix), now
	var evt domain.Event
	if in.Form != nil {
		f := *in.Form
		f.ID, f.SubmittedAt = ids.New(formPrefix), now
		f.Identifier, f.IdentifierType, _ = session.Identify(f)
		in.Form, in.HasConversion = &f, true
		evt = session.FormSubmitted(&in)
	}
	out, replayed, err := s.Store.Record(ctx, in, evt)
	if err != nil {
		return out, false, err
	}
	if !replayed && s.Recorded != nil {
		s.Recorded()
	}
	return out, replayed, nil
}

// Get returns a session of a visible page.
func (s *Service) Get(ctx context.Context, tenantID, pageID, id string) (session.Session, error) {
	return s.Store.Get(ctx, tenantID, pageID, id)
}

// List returns a page of a visible page's sessions, newest first, and how many match f.
func (s *Service) List(ctx context.Context, tenantID, pageID string, f session.Filter, after *session.After,
	limit int) ([]session.Session, int64, error) {
	return s.Store.List(ctx, tenantID, pageID, f, after, limit)
}
