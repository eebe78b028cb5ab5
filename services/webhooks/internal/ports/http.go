// Package ports serves the webhooks context over HTTP: it maps requests to use cases and
// results to the API's shapes, and nothing else.
package ports

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/pagination"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/webhooks/internal/app"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// Handlers serve the webhooks routes. The OpenAPI document judged every request before it
// gets here (request.Document): handlers decode bodies and check only what it cannot
// state (the URL's host and port, and whether its addresses are public).
type Handlers struct {
	App     *app.Service
	Cursors *pagination.Codec
}

// Register mounts the routes on the tenant-scoped /v0 router.
func (h *Handlers) Register(r fiber.Router) {
	const sub = "/webhook_subscriptions/:subscription_id"
	r.Get("/webhook_subscriptions", h.listSubscriptions)
	r.Post("/webhook_subscriptions", h.createSubscription)
	r.Get(sub, h.getSubscription)
	r.Patch(sub, h.updateSubscription)
	r.Delete(sub, h.deleteSubscription)
	r.Post(sub+"/rotate_secret", h.rotateSecret)
	r.Get(sub+"/deliveries", h.listDeliveries)
	r.Get(sub+"/deliveries/:delivery_id", h.getDelivery)
	r.Post(sub+"/deliveries/:delivery_id/retry", h.retryDelivery)
	r.Post(sub+"/test", h.sendTestEvent)
	r.Post(sub+"/replay", h.replay)
	r.Get("/events", h.listEvents)
	r.Get("/events/:event_id", h.getEvent)
	r.Get("/event_types", h.listEventTypes)
}

// viewEvent shows an event. Its body, the bytes every delivery sends (domain.NewBody),
// decodes into the document's WebhookEvent and encodes back to the same bytes.
func viewEvent(e domain.Event) (apitypes.Event, error) {
	v := apitypes.Event{EventId: e.ID, Type: apitypes.WebhookEventType(e.Type), Subject: e.Subject, OccurredAt: timestamp.Format(e.OccurredAt)}
	return v, json.Unmarshal(e.Body, &v.Body)
}

func (h *Handlers) listEvents(c *fiber.Ctx) error {
	q := request.NewQuery(c)
	f := domain.EventFilter{Type: q.String("type"), Subject: q.String("subject"), Since: q.Time("since"), Until: q.Time("until")}
	p := h.Cursors.Parse(q, pagination.Scope(tenant.From(c), "events", f.Type, f.Subject, q.String("since"), q.String("until")))
	before, err := oneKey(q, p)
	if err != nil {
		return err
	}
	f.Before = before
	es, err := h.App.ListEvents(c.UserContext(), tenant.From(c), f, p.Limit+1)
	if err != nil {
		return err
	}
	views := make([]apitypes.Event, len(es))
	for i, e := range es {
		if views[i], err = viewEvent(e); err != nil {
			return err
		}
	}
	return c.JSON(pagination.Build(h.Cursors, p, views, nil, func(v apitypes.Event) []string { return []string{v.EventId} }))
}

type replayBody struct {
	Since      time.Time `json:"since"`
	Until      time.Time `json:"until"`
	EventTypes []string  `json:"eventTypes"`
}

func (h *Handlers) replay(c *fiber.Ctx) error {
	var b replayBody
	if err := json.Unmarshal(c.Body(), &b); err != nil {
		return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_type", Message: "invalid replay body", Path: []any{}})
	}
	if !b.Until.After(b.Since) {
		return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "custom", Message: "until must be after since", Path: []any{"until"}})
	}
	res, err := h.App.ReplayEvents(c.UserContext(), tenant.From(c), c.Params("subscription_id"),
		domain.Replay{Since: b.Since, Until: b.Until, Types: b.EventTypes})
	switch {
	case errors.Is(err, domain.ErrReplayTooSoon): // a 429 with Retry-After, no domain kind
		return apierror.TooManyAtOnce(fmt.Sprintf("this subscription was replayed less than %s ago; retry after it", domain.ReplayInterval),
			fmt.Sprint(int(domain.ReplayInterval.Seconds())))
	case err != nil:
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(apitypes.WebhookReplayResult{Queued: res.Queued, AlreadyPending: res.AlreadyPending,
		HasMore: res.NextSince != nil, NextSince: timestamp.FormatPtr(res.NextSince)})
}

func (h *Handlers) getEvent(c *fiber.Ctx) error {
	e, err := h.App.GetEvent(c.UserContext(), tenant.From(c), c.Params("event_id"))
	if err != nil {
		return err
	}
	v, err := viewEvent(e)
	if err != nil {
		return err
	}
	return c.JSON(v)
}

func (h *Handlers) listEventTypes(c *fiber.Ctx) error {
	schemas, err := h.App.PayloadSchemas()
	if err != nil {
		return apierror.Internal(err)
	}
	return c.JSON(viewEventTypes(schemas))
}

// viewEventTypes lists the public event types with their payload schemas.
func viewEventTypes(schemas map[string]domain.PayloadSchema) apitypes.EventTypeList {
	var list apitypes.EventTypeList // its items' type has no name: Grow makes them
	list.Items = slices.Grow(list.Items, len(events.PublicTypes))[:len(events.PublicTypes)]
	for i, t := range events.PublicTypes {
		it := &list.Items[i]
		it.Type, it.SchemaName, it.PayloadSchema = apitypes.WebhookEventType(t), schemas[t].Name, schemas[t].Schema
	}
	return list
}

// --- shapes of the API: the document's, generated in api/apitypes

func viewSubscription(s domain.Subscription) apitypes.WebhookSubscription {
	v := apitypes.WebhookSubscription{SubscriptionId: s.ID, Url: s.URL, Active: s.Active,
		DisabledReason: s.DisabledReason, DisabledAt: timestamp.FormatPtr(s.DisabledAt),
		CreatedAt: timestamp.Format(s.CreatedAt), UpdatedAt: timestamp.Format(s.UpdatedAt)}
	if s.Events != nil { // nil (null): every type
		v.Events = &apitypes.WebhookEventTypes{}
		for _, t := range s.Events {
			*v.Events = append(*v.Events, apitypes.WebhookEventType(t))
		}
	}
	return v
}

// viewWithSecret shows a subscription with its signing secret, when the secret is created
// or rotated.
func viewWithSecret(s domain.Subscription) apitypes.WebhookSubscriptionWithSecret {
	v := viewSubscription(s)
	return apitypes.WebhookSubscriptionWithSecret{SubscriptionId: v.SubscriptionId, Url: v.Url, Events: v.Events, Active: v.Active,
		DisabledReason: v.DisabledReason, DisabledAt: v.DisabledAt, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt, SigningSecret: s.Secret}
}

func viewDelivery(d domain.Delivery) apitypes.WebhookDelivery {
	v := apitypes.WebhookDelivery{DeliveryId: d.ID, SubscriptionId: d.SubscriptionID, EventId: d.EventID,
		EventType: apitypes.WebhookEventType(d.EventType), Status: apitypes.WebhookDeliveryStatus(d.Status), CreatedAt: timestamp.Format(d.CreatedAt), NextAttemptAt: timestamp.FormatPtr(d.NextAttemptAt),
		Attempts: make([]apitypes.WebhookDeliveryAttempt, len(d.Attempts)), AttemptsCount: d.AttemptsCount}
	for i, a := range d.Attempts {
		v.Attempts[i] = apitypes.WebhookDeliveryAttempt{AttemptedAt: timestamp.Format(a.AttemptedAt), StatusCode: a.StatusCode,
			DurationMs: int(a.DurationMs), Error: a.Error, ResponseSnippet: a.ResponseSnippet}
	}
	return v
}

// The bodies, as the document's WebhookSubscriptionCreate and WebhookSubscriptionUpdate
// describe them (and judged them).

type subscriptionCreate struct {
	URL    string                     `json:"url"`
	Events request.Nullable[[]string] `json:"events"`
	Active *bool                      `json:"active"`
}

type subscriptionUpdate struct {
	URL    *string                    `json:"url"`
	Events request.Nullable[[]string] `json:"events"`
	Active *bool                      `json:"active"`
}

func eventsOf(n request.Nullable[[]string]) []string {
	if p := n.Ptr(); p != nil {
		return *p
	}
	return nil // absent or null: every type
}

// --- handlers

func (h *Handlers) createSubscription(c *fiber.Ctx) error {
	var in subscriptionCreate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	if err := checkURL(&in.URL); err != nil {
		return err
	}
	active := true // the spec's default
	if in.Active != nil {
		active = *in.Active
	}
	s, err := h.App.CreateSubscription(c.UserContext(), tenant.From(c), app.NewSubscription{
		URL: in.URL, Events: eventsOf(in.Events), Active: active})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(viewWithSecret(s))
}

// checkURL applies the URL rules the document states only in words (domain.URLProblem)
// to a body that is otherwise valid.
func checkURL(raw *string) error {
	if raw == nil {
		return nil
	}
	if p := domain.URLProblem(*raw); p != "" {
		return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_string", Message: "Invalid url: " + p, Path: []any{"url"}})
	}
	return nil
}

func (h *Handlers) getSubscription(c *fiber.Ctx) error {
	s, err := h.App.GetSubscription(c.UserContext(), tenant.From(c), c.Params("subscription_id"))
	if err != nil {
		return err
	}
	return c.JSON(viewSubscription(s))
}

func (h *Handlers) updateSubscription(c *fiber.Ctx) error {
	var in subscriptionUpdate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	if err := checkURL(in.URL); err != nil {
		return err
	}
	s, err := h.App.UpdateSubscription(c.UserContext(), tenant.From(c), c.Params("subscription_id"), domain.Patch{
		URL: in.URL, SetEvents: in.Events.Set, Events: eventsOf(in.Events), Active: in.Active})
	if err != nil {
		return err
	}
	return c.JSON(viewSubscription(s))
}

func (h *Handlers) deleteSubscription(c *fiber.Ctx) error {
	if err := h.App.DeleteSubscription(c.UserContext(), tenant.From(c), c.Params("subscription_id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// rotateSecret and retryDelivery take no body or an empty object: the document judged it.
func (h *Handlers) rotateSecret(c *fiber.Ctx) error {
	s, err := h.App.RotateSecret(c.UserContext(), tenant.From(c), c.Params("subscription_id"))
	if err != nil {
		return err
	}
	return c.JSON(viewWithSecret(s))
}

func (h *Handlers) listSubscriptions(c *fiber.Ctx) error {
	q := request.NewQuery(c)
	p := h.Cursors.Parse(q, pagination.Scope(tenant.From(c), "webhook_subscriptions"))
	after, err := oneKey(q, p)
	if err != nil {
		return err
	}
	subs, total, err := h.App.ListSubscriptions(c.UserContext(), tenant.From(c), after, p.Limit+1)
	if err != nil {
		return err
	}
	views := pagination.Map(subs, viewSubscription)
	return c.JSON(pagination.Build(h.Cursors, p, views, &total, func(v apitypes.WebhookSubscription) []string { return []string{v.SubscriptionId} }))
}

// oneKey reads a keyset position of one ID ("" on the first page).
func oneKey(q *request.Query, p pagination.Params) (string, error) {
	if p.After != nil && len(p.After) != 1 {
		q.Fail("cursor", "invalid_cursor", "Invalid cursor: malformed position")
	}
	if err := q.Err(); err != nil {
		return "", err
	}
	if p.After == nil {
		return "", nil
	}
	return p.After[0], nil
}

func (h *Handlers) listDeliveries(c *fiber.Ctx) error {
	subID := c.Params("subscription_id")
	q := request.NewQuery(c)
	status := q.String("status")
	p := h.Cursors.Parse(q, pagination.Scope(tenant.From(c), "deliveries", subID, status))
	before, err := oneKey(q, p)
	if err != nil {
		return err
	}
	ds, total, err := h.App.ListDeliveries(c.UserContext(), tenant.From(c), subID,
		domain.DeliveryFilter{Status: status, Before: before}, p.Limit+1)
	if err != nil {
		return err
	}
	views := pagination.Map(ds, viewDelivery)
	return c.JSON(pagination.Build(h.Cursors, p, views, &total, func(v apitypes.WebhookDelivery) []string { return []string{v.DeliveryId} }))
}

func (h *Handlers) getDelivery(c *fiber.Ctx) error {
	d, err := h.App.GetDelivery(c.UserContext(), tenant.From(c), c.Params("subscription_id"), c.Params("delivery_id"))
	if err != nil {
		return err
	}
	return c.JSON(viewDelivery(d))
}

func (h *Handlers) retryDelivery(c *fiber.Ctx) error {
	d, err := h.App.RetryDelivery(c.UserContext(), tenant.From(c), c.Params("subscription_id"), c.Params("delivery_id"))
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(viewDelivery(d))
}
