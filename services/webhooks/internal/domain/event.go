package domain

import (
	"context"
	"errors"
	"time"

	"github.com/customerapi/platform/libs/errkind"
)

// ErrEventNotFound is returned for an event the tenant does not have (or no longer has).
var ErrEventNotFound = errkind.NotFound.New("event not found (events are kept for EVENT_RETENTION, 30 days by default)")

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
	// ReplayEvents queues, for every event of r that the subscription would have
	// received (its types, since it was created), a delivery with the event's own ID,
	// using deliveryIDs for new deliveries; at most ReplayLimit events.
	ReplayEvents(ctx context.Context, tenantID, subscriptionID string, r Replay, deliveryIDs []string) (ReplayResult, error)
}

// ErrReplayTooSoon is returned for a replay of a subscription replayed moments ago.
var ErrReplayTooSoon = errors.New("the subscription was replayed moments ago")

// ReplayInterval is the least time between two replays of one subscription.
const ReplayInterval = 10 * time.Second

// ReplayLimit bounds the events one replay queues.
const ReplayLimit = 1000

// Replay asks for the deliveries of a time range of events to one subscription again.
type Replay struct {
	Since, Until time.Time
	// Types, when set, keeps these event types (within the subscription's own).
	Types []string
}

// ReplayResult says what a replay queued.
type ReplayResult struct {
	// Queued deliveries: new ones, and ended ones (delivered or failed) made due again.
	Queued int
	// AlreadyPending are the events whose delivery was still pending: left as they are.
	AlreadyPending int
	// NextSince, when set, is where a further replay continues: more events matched than
	// ReplayLimit.
	NextSince *time.Time
}
