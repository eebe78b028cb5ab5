package domain

import (
	"context"
	"errors"
	"time"
)

// ErrEventNotFound is returned for an event the tenant does not have (or no longer has).
var ErrEventNotFound = errors.New("event not found")

// Event is an event as the events API shows it: Body is the JSON a delivery sends.
type Event struct {
	ID         string
	Type       string
	Subject    string
	OccurredAt time.Time
	Body       []byte
}

// EventFilter narrows an events list; zero fields do not filter.
type EventFilter struct {
	Type    string
	Subject string
	// Since and Until bound OccurredAt: Since <= occurredAt < Until.
	Since, Until *time.Time
	// Before is the ID of the last event seen ("" for the first page): newest first.
	Before string
}

// EventRepository reads the stored events.
type EventRepository interface {
	ListEvents(ctx context.Context, tenantID string, f EventFilter, limit int) ([]Event, error)
	GetEvent(ctx context.Context, tenantID, eventID string) (Event, error)
}
