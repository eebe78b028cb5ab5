// Package ports serves the webhooks context over HTTP: it maps requests to use cases and
// results to the API's shapes, and nothing else.
package ports

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

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

type eventView struct {
	EventID    string          `json:"eventId"`
	Type       string          `json:"type"`
	Subject    string          `json:"subject"`
	OccurredAt string          `json:"occurredAt"`
	Body       json.RawMessage `json:"body"`
}

func viewEvent(e domain.Event) eventView {
	return eventView{EventID: e.ID, Type: e.Type, Subject: e.Subject, OccurredAt: timestamp.Format(e.OccurredAt), Body: e.Body}
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
	views := make([]eventView, len(es))
	for i, e := range es {
		views[i] = viewEvent(e)
	}
	return c.JSON(pagination.Build(h.Cursors, p, views, nil, func(v eventView) []string { return []string{v.EventID} }))
}

type replayBody struct {
	Since      time.Time `json:"since"`
	Until      time.Time `json:"until"`
	EventTypes []string  `json:"eventTypes"`
}

type replayView struct {
	Queued         int     `json:"queued"`
	AlreadyPending int     `json:"alreadyPending"`
	HasMore        bool    `json:"hasMore"`
	NextSince      *string `json:"nextSince"`
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
	return c.Status(fiber.StatusAccepted).JSON(replayView{Queued: res.Queued, AlreadyPending: res.AlreadyPending,
		HasMore: res.NextSince != nil, NextSince: timestamp.FormatPtr(res.NextSince)})
}

func (h *Handlers) getEvent(c *fiber.Ctx) error {
	e, err := h.App.GetEvent(c.UserContext(), tenant.From(c), c.Params("event_id"))
	if err != nil {
		return err
	}
	return c.JSON(viewEvent(e))
}

type eventTypeView struct {
	Type          string          `json:"type"`
	SchemaName    string          `json:"schemaName"`
	PayloadSchema json.RawMessage `json:"payloadSchema"`
}

func (h *Handlers) listEventTypes(c *fiber.Ctx) error {
	schemas, err := h.App.PayloadSchemas()
	if err != nil {
		return apierror.Internal(err)
	}
	items := make([]eventTypeView, 0, len(events.PublicTypes))
	for _, t := range events.PublicTypes {
		s := schemas[t]
		items = append(items, eventTypeView{Type: t, SchemaName: s.Name, PayloadSchema: s.Schema})
	}
	return c.JSON(map[string]any{"items": items})
}

// --- shapes of the API

type subscriptionView struct {
	SubscriptionID string   `json:"subscriptionId"`
	URL            string   `json:"url"`
	Events         []string `json:"events"`
	Active         bool     `json:"active"`
	DisabledReason *string  `json:"disabledReason"`
	DisabledAt     *string  `json:"disabledAt"`
	CreatedAt      string   `json:"createdAt"`
	UpdatedAt      string   `json:"updatedAt"`
	// SigningSecret is shown only when the secret is created or rotated.
	SigningSecret string `json:"signingSecret,omitempty"`
}

func viewSubscription(s domain.Subscription) subscriptionView {
	return subscriptionView{SubscriptionID: s.ID, URL: s.URL, Events: s.Events, Active: s.Active,
		DisabledReason: s.DisabledReason, DisabledAt: timestamp.FormatPtr(s.DisabledAt),
		CreatedAt: timestamp.Format(s.CreatedAt), UpdatedAt: timestamp.Format(s.UpdatedAt)}
}

func viewWithSecret(s domain.Subscription) subscriptionView {
	v := viewSubscription(s)
	v.SigningSecret = s.Secret
	return v
}

type attemptView struct {
	AttemptedAt     string  `json:"attemptedAt"`
	StatusCode      *int    `json:"statusCode"`
	DurationMs      int64   `json:"durationMs"`
	Error           *string `json:"error"`
	ResponseSnippet *string `json:"responseSnippet"`
}

type deliveryView struct {
	DeliveryID     string        `json:"deliveryId"`
	SubscriptionID string        `json:"subscriptionId"`
	EventID        string        `json:"eventId"`
	EventType      string        `json:"eventType"`
	Status         string        `json:"status"`
	CreatedAt      string        `json:"createdAt"`
	NextAttemptAt  *string       `json:"nextAttemptAt"`
	Attempts       []attemptView `json:"attempts"`
	AttemptsCount  int           `json:"attemptsCount"`
}

func viewDelivery(d domain.Delivery) deliveryView {
	v := deliveryView{DeliveryID: d.ID, SubscriptionID: d.SubscriptionID, EventID: d.EventID, EventType: d.EventType,
		Status: string(d.Status), CreatedAt: timestamp.Format(d.CreatedAt), NextAttemptAt: timestamp.FormatPtr(d.NextAttemptAt),
		Attempts: make([]attemptView, len(d.Attempts)), AttemptsCount: d.AttemptsCount}
	for i, a := range d.Attempts {
		v.Attempts[i] = attemptView{AttemptedAt: timestamp.Format(a.AttemptedAt), StatusCode: a.StatusCode,
			DurationMs: a.DurationMs, Error: a.Error, ResponseSnippet: a.ResponseSnippet}
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
	views := make([]subscriptionView, len(subs))
	for i, s := range subs {
		views[i] = viewSubscription(s)
	}
	return c.JSON(pagination.Build(h.Cursors, p, views, &total, func(v subscriptionView) []string { return []string{v.SubscriptionID} }))
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
	views := make([]deliveryView, len(ds))
	for i, d := range ds {
		views[i] = viewDelivery(d)
	}
	return c.JSON(pagination.Build(h.Cursors, p, views, &total, func(v deliveryView) []string { return []string{v.DeliveryID} }))
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
