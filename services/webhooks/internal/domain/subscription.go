// Package domain holds the webhooks context's types and rules, free of transport and
// storage concerns.
package domain

import (
	"slices"
	"time"

	"github.com/customerapi/platform/libs/errkind"
)

// Limits and fixed rules of the webhooks context (docs/api.md records them).
const (
	// SecretGrace is how long a replaced signing secret keeps signing webhook-signature.
	SecretGrace = 24 * time.Hour
	// MaxSubscriptionsPerTenant bounds the fan-out of one event.
	MaxSubscriptionsPerTenant = 100
)

// Errors of the subscriptions and deliveries, each of its kind (libs/errkind), whose
// message is the answer's detail.
var (
	ErrSubscriptionNotFound = errkind.NotFound.New("webhook subscription not found")
	ErrDeliveryNotFound     = errkind.NotFound.New("delivery not found")
	ErrSubscriptionInactive = errkind.Conflict.New(
		"the subscription is not active; activate it before retrying its deliveries")
	ErrAttemptInProgress    = errkind.Conflict.New("an attempt of this delivery is in progress; retry after it ends")
	ErrTooManySubscriptions = errkind.Conflict.New("the tenant already has the maximum of 100 webhook subscriptions")
)

// Subscription registers a URL for deliveries of some event types of one tenant.
type Subscription struct {
	ID       string
	TenantID string
	URL      string
	// Events lists the event types delivered; nil means every public type.
	Events []string
	Active bool
	// Secret signs deliveries; PreviousSecret, until PreviousSecretUntil, also signs
	// webhook-signature after a rotation.
	Secret              string
	PreviousSecret      *string
	PreviousSecretUntil *time.Time
	// DisabledReason and DisabledAt say why and when the platform deactivated the
	// subscription; both are nil when it did not.
	DisabledReason *string
	DisabledAt     *time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Patch is a partial update; nil fields (and SetEvents false) stay as they are.
type Patch struct {
	URL       *string
	SetEvents bool
	Events    []string // with SetEvents: nil means every type
	Active    *bool
}

// Apply changes s by p and reports whether anything changed. Activating a subscription
// the platform disabled clears the reason.
func (s *Subscription) Apply(p Patch, now time.Time) bool {
	changed := false
	if p.URL != nil && *p.URL != s.URL {
		s.URL, changed = *p.URL, true
	}
	if p.SetEvents && !sameEvents(p.Events, s.Events) {
		s.Events, changed = p.Events, true
	}
	if p.Active != nil && *p.Active != s.Active {
		s.Active, changed = *p.Active, true
		s.DisabledReason, s.DisabledAt = nil, nil
	}
	if changed {
		s.UpdatedAt = now
	}
	return changed
}

func sameEvents(a, b []string) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return slices.Equal(a, b)
}

// Rotate replaces the signing secret; the old one keeps signing webhook-signature for
// SecretGrace. A second rotation within the grace period drops the oldest secret.
func (s *Subscription) Rotate(secret string, now time.Time) {
	old, until := s.Secret, now.Add(SecretGrace)
	s.PreviousSecret, s.PreviousSecretUntil = &old, &until
	s.Secret = secret
	s.UpdatedAt = now
}
