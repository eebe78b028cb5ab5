package domain

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/customerapi/platform/libs/errkind"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/timestamp"
)

// Status is the state of a delivery.
type Status string

// Delivery states: pending until an attempt succeeds or the retry schedule is exhausted.
const (
	StatusPending   Status = "pending"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
)

// Delivery is one event for one subscription, with its attempts.
type Delivery struct {
	ID             string
	SubscriptionID string
	EventID        string
	EventType      string
	Status         Status
	CreatedAt      time.Time
	// NextAttemptAt is when the next attempt is due; nil unless pending.
	NextAttemptAt *time.Time
	// InFlight is true while a worker holds the delivery for an attempt.
	InFlight bool
	// Attempts holds the latest attempts, at most ListedAttempts, oldest first.
	Attempts []Attempt
	// AttemptsCount counts every attempt made, listed or not.
	AttemptsCount int
}

// ListedAttempts bounds the attempts a delivery carries in an answer: the latest ones.
const ListedAttempts = 20

// RetryAttemptsLimit is the number of attempts after which a delivery takes no manual
// retry: each retry starts a fresh schedule, so retries alone would grow it without end.
const RetryAttemptsLimit = 50

// ErrRetryLimit reports a manual retry of a delivery that has made RetryAttemptsLimit attempts.
var ErrRetryLimit = errkind.Conflict.New(fmt.Sprintf(
	"this delivery has made %d attempts, the most that allows a manual retry; it takes no more retries", RetryAttemptsLimit))

// CheckRetry refuses a manual retry of a delivery that has made RetryAttemptsLimit attempts.
func (d Delivery) CheckRetry() error {
	if d.AttemptsCount >= RetryAttemptsLimit {
		return ErrRetryLimit
	}
	return nil
}

// Attempt is one try to deliver.
type Attempt struct {
	AttemptedAt time.Time
	// StatusCode is nil when no HTTP answer arrived (refused, unreachable, timed out).
	StatusCode *int
	DurationMs int64
	// Error says why the attempt failed; nil on success.
	Error *string
	// ResponseSnippet holds the first bytes of the answer's body.
	ResponseSnippet *string
}

// Reasons the platform records when it disables a subscription.
const (
	ReasonGone = "the receiver answered 410 Gone"
)

// ReasonFailing is the reason recorded when deliveries kept failing for d since since.
func ReasonFailing(d time.Duration, since time.Time) string {
	return "every delivery attempt failed for " + d.String() + " (since " + since.UTC().Format(time.RFC3339) + ")"
}

// Body is what a delivery sends: the event's time and ID, whether it is a test event,
// and its payload unchanged.
type Body struct {
	Timestamp string `json:"timestamp"`
	EventID   string `json:"eventId"`
	// Test is true in the body of a test event (POST …/test) and left out of every other.
	Test    bool            `json:"test,omitempty"`
	Payload json.RawMessage `json:"payload"`
}

// TestHeader is the request header that marks every attempt of a test event's delivery,
// with the value "true"; real deliveries do not carry it. Unlike the body's "test"
// field, it is not covered by the signatures.
const TestHeader = "X-Webhook-Test"

// ErrBadPayload reports an event whose payload breaks the event contract.
var ErrBadPayload = errors.New("event payload is not a JSON object whose type is the event's type")

// NewBody renders the body of every delivery of an event. The payload must be a JSON
// object whose "type" is the event's type: receivers rely on it.
func NewBody(e events.Envelope) ([]byte, error) { return newBody(e, false) }

// NewTestBody renders the body of a test event: NewBody's, with "test": true.
func NewTestBody(e events.Envelope) ([]byte, error) { return newBody(e, true) }

func newBody(e events.Envelope, test bool) ([]byte, error) {
	var head struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(e.Payload, &head); err != nil || head.Type == nil || *head.Type != e.Type {
		return nil, fmt.Errorf("%w (event %s)", ErrBadPayload, e.ID)
	}
	b, err := json.Marshal(Body{Timestamp: timestamp.Format(e.OccurredAt), EventID: e.ID, Test: test, Payload: e.Payload})
	if err != nil {
		return nil, fmt.Errorf("render body of event %s: %w", e.ID, err)
	}
	return b, nil
}

// DeliveryFilter narrows a deliveries list.
type DeliveryFilter struct {
	// Status, when set, keeps deliveries in that state.
	Status string
	// Before is the ID of the last delivery seen ("" for the first page): the list runs
	// newest first.
	Before string
}
