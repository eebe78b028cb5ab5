// Package app holds the webhooks use cases (they make IDs, secrets and timestamps, check
// target URLs, apply patches and call the repository) and the workers that keep stored
// secrets sealed and old deliveries purged; the delivery engine is app/delivery.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/customerapi/platform/libs/errkind"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
	"github.com/customerapi/platform/services/webhooks/internal/domain/signing"
)

// Service runs the webhooks use cases.
type Service struct {
	Repo domain.Repository
	URLs domain.URLChecker
	// Types reads the event types' payloads from the API document.
	Types domain.EventTypes
	// Clock tells the time (the system clock when nil).
	Clock timestamp.Clock
	// Log, when set, records which address a refused URL resolved to: the operator may
	// know it, the tenant's answer never says it.
	Log *slog.Logger
}

// lookupTimeout bounds the DNS lookup of a URL check.
const lookupTimeout = 3 * time.Second

// checkURL refuses a URL whose host is, or resolves to, a forbidden address (an
// errkind.Invalid about the body's url). A name that does not resolve (yet) is accepted:
// every delivery checks again when it dials.
func (s *Service) checkURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errkind.Invalid.At("not a URL", "url")
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	err = s.URLs.CheckURL(ctx, u)
	var refused *domain.RefusedError
	if errors.As(err, &refused) {
		if s.Log != nil {
			s.Log.InfoContext(ctx, "webhook subscription URL refused", slog.String("host", u.Hostname()),
				slog.String("detail", refused.Detail()))
		}
		return errkind.Invalid.At(refused.Error()+"; deliveries only go to public addresses", "url")
	}
	return nil
}

// NewSubscription is the input of CreateSubscription.
type NewSubscription struct {
	URL string
	// Events lists the event types; nil means every type.
	Events []string
	Active bool
}

// CreateSubscription creates a subscription with a fresh signing secret.
func (s *Service) CreateSubscription(ctx context.Context, tenantID string, in NewSubscription) (domain.Subscription, error) {
	if err := s.checkURL(ctx, in.URL); err != nil {
		return domain.Subscription{}, err
	}
	secret, err := signing.NewSecret()
	if err != nil {
		return domain.Subscription{}, err
	}
	now := s.Clock.Now()
	sub := domain.Subscription{ID: ids.New("whsub"), TenantID: tenantID, URL: in.URL, Events: in.Events,
		Active: in.Active, Secret: secret, CreatedAt: now, UpdatedAt: now}
	if err := s.Repo.CreateSubscription(ctx, sub); err != nil {
		return domain.Subscription{}, err
	}
	return sub, nil
}

// GetSubscription returns a subscription.
func (s *Service) GetSubscription(ctx context.Context, tenantID, id string) (domain.Subscription, error) {
	return s.Repo.GetSubscription(ctx, tenantID, id)
}

// ListSubscriptions returns a page of subscriptions in creation order.
func (s *Service) ListSubscriptions(ctx context.Context, tenantID, after string, limit int) ([]domain.Subscription, int64, error) {
	return s.Repo.ListSubscriptions(ctx, tenantID, after, limit)
}

// UpdateSubscription applies a patch; a new URL is checked first.
func (s *Service) UpdateSubscription(ctx context.Context, tenantID, id string, p domain.Patch) (domain.Subscription, error) {
	if p.URL != nil {
		if err := s.checkURL(ctx, *p.URL); err != nil {
			return domain.Subscription{}, err
		}
	}
	now := s.Clock.Now()
	return s.Repo.UpdateSubscription(ctx, tenantID, id, func(sub *domain.Subscription) bool { return sub.Apply(p, now) })
}

// RotateSecret gives a subscription a new signing secret; the old one keeps signing
// webhook-signature for domain.SecretGrace.
func (s *Service) RotateSecret(ctx context.Context, tenantID, id string) (domain.Subscription, error) {
	secret, err := signing.NewSecret()
	if err != nil {
		return domain.Subscription{}, err
	}
	now := s.Clock.Now()
	return s.Repo.UpdateSubscription(ctx, tenantID, id, func(sub *domain.Subscription) bool {
		sub.Rotate(secret, now)
		return true
	})
}

// DeleteSubscription deletes a subscription with its deliveries.
func (s *Service) DeleteSubscription(ctx context.Context, tenantID, id string) error {
	return s.Repo.DeleteSubscription(ctx, tenantID, id)
}

// ListDeliveries returns a page of a subscription's deliveries, newest first.
func (s *Service) ListDeliveries(ctx context.Context, tenantID, subscriptionID string, f domain.DeliveryFilter, limit int) ([]domain.Delivery, int64, error) {
	return s.Repo.ListDeliveries(ctx, tenantID, subscriptionID, f, limit)
}

// GetDelivery returns a delivery with its latest attempts (domain.ListedAttempts).
func (s *Service) GetDelivery(ctx context.Context, tenantID, subscriptionID, deliveryID string) (domain.Delivery, error) {
	return s.Repo.GetDelivery(ctx, tenantID, subscriptionID, deliveryID)
}

// RetryDelivery makes a delivery due now with a fresh retry schedule, unless it has made
// domain.RetryAttemptsLimit attempts.
func (s *Service) RetryDelivery(ctx context.Context, tenantID, subscriptionID, deliveryID string) (domain.Delivery, error) {
	d, err := s.Repo.RetryDelivery(ctx, tenantID, subscriptionID, deliveryID)
	if err != nil {
		return domain.Delivery{}, fmt.Errorf("retry delivery: %w", err)
	}
	return d, nil
}

// ListEvents returns up to limit of the tenant's stored events matching f, newest first.
func (s *Service) ListEvents(ctx context.Context, tenantID string, f domain.EventFilter, limit int) ([]domain.Event, error) {
	return s.Repo.ListEvents(ctx, tenantID, f, limit)
}

// GetEvent returns one of the tenant's stored events.
func (s *Service) GetEvent(ctx context.Context, tenantID, eventID string) (domain.Event, error) {
	return s.Repo.GetEvent(ctx, tenantID, eventID)
}

// ReplayEvents queues again the deliveries of a time range of events to a subscription
// (domain.EventRepository.ReplayEvents), with new delivery IDs where none exists.
func (s *Service) ReplayEvents(ctx context.Context, tenantID, subscriptionID string, r domain.Replay) (domain.ReplayResult, error) {
	deliveryIDs := make([]string, domain.ReplayLimit)
	for i := range deliveryIDs {
		deliveryIDs[i] = ids.New("delivery")
	}
	res, err := s.Repo.ReplayEvents(ctx, tenantID, subscriptionID, r, deliveryIDs)
	if err != nil {
		return domain.ReplayResult{}, fmt.Errorf("replay events: %w", err)
	}
	return res, nil
}

// RecordEvent is the intake: it records the deliveries of evt to the subscriptions of its
// tenant that list its type, through in, bound to the intake consumer's transaction (the
// event counts as processed only with its deliveries).
func (s *Service) RecordEvent(ctx context.Context, in domain.EventRecorder, evt events.Envelope) error {
	_, err := in.RecordEvent(ctx, evt)
	return err
}
