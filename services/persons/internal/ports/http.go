// Package ports drives the persons use cases: HTTP requests (mapped to use cases, results
// to the API's shapes) and the form.submitted consumer.
package ports

import (
	"encoding/json"
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/keyset"
	"github.com/customerapi/platform/libs/pagination"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/persons/internal/app"
	"github.com/customerapi/platform/services/persons/internal/domain"
)

// Handlers serve the persons and accounts routes.
type Handlers struct {
	App     *app.Service
	Cursors *pagination.Codec
}

// Register mounts the routes on the tenant-scoped /v0 router.
func (h *Handlers) Register(r fiber.Router) {
	r.Get("/persons/search", h.searchPersons)
	r.Post("/persons", h.createPerson)
	r.Get("/persons/:person_id", h.getPerson)
	r.Patch("/persons/:person_id", h.updatePerson)
	r.Delete("/persons/:person_id", h.deletePerson)
	r.Get("/persons/:person_id/logs", h.listLogs(domain.PersonLogs, "person_id"))
	r.Post("/persons/:person_id/logs", h.createLog(domain.PersonLogs, "person_id"))
	r.Get("/persons/:person_id/logs/:log_id", h.getLog(domain.PersonLogs, "person_id"))
	r.Delete("/persons/:person_id/logs/:log_id", h.deleteLog(domain.PersonLogs, "person_id"))
	r.Get("/accounts", h.listAccounts)
	r.Post("/accounts", h.createAccount)
	r.Get("/accounts/:account_id", h.getAccount)
	r.Get("/accounts/:account_id/logs", h.listLogs(domain.AccountLogs, "account_id"))
	r.Post("/accounts/:account_id/logs", h.createLog(domain.AccountLogs, "account_id"))
	r.Get("/accounts/:account_id/logs/:log_id", h.getLog(domain.AccountLogs, "account_id"))
	r.Delete("/accounts/:account_id/logs/:log_id", h.deleteLog(domain.AccountLogs, "account_id"))
}

// --- shapes of the API: the document's, generated in api/apitypes

func viewPerson(p domain.Person) apitypes.Person {
	return apitypes.Person{PersonId: p.ID, Name: p.Name, Email: p.Email, Domain: p.Domain, Slug: p.Slug,
		PhoneNumber: p.PhoneNumber, LinkedinProfileUrl: p.LinkedinProfileURL,
		CreatedAt: timestamp.Format(p.CreatedAt), UpdatedAt: timestamp.Format(p.UpdatedAt)}
}

func viewAccount(a domain.Account) apitypes.Account {
	v := apitypes.Account{AccountId: a.ID, Domain: a.Domain, Name: a.Name, CreatedAt: timestamp.Format(a.CreatedAt),
		UpdatedAt: timestamp.Format(a.UpdatedAt), LatestActivityAt: timestamp.FormatPtr(a.LatestActivityAt),
		LinkedPersons: make([]apitypes.Person, len(a.LinkedPersons))}
	for i, p := range a.LinkedPersons {
		v.LinkedPersons[i] = viewPerson(p)
	}
	return v
}

func viewAccountItem(a domain.Account) apitypes.AccountListItem {
	return apitypes.AccountListItem{AccountId: a.ID, Domain: a.Domain, Name: a.Name, CreatedAt: timestamp.Format(a.CreatedAt),
		UpdatedAt: timestamp.Format(a.UpdatedAt), LatestActivityAt: timestamp.FormatPtr(a.LatestActivityAt),
		LinkedPersonsCount: int(a.LinkedPersonsCount)}
}

// viewPersonLog and viewAccountLog render an entry of each owner; its payload is the
// stored object as PostgreSQL gives it back.
func viewPersonLog(l domain.Log) apitypes.PersonLog {
	return apitypes.PersonLog{PersonId: l.OwnerID, PersonLogId: l.ID, Source: l.Source, Type: l.Type, Payload: l.Payload,
		IdempotencyKey: l.IdempotencyKey, CreatedAt: timestamp.Format(l.CreatedAt),
		UpdatedAt: timestamp.FormatPtr(l.UpdatedAt), DeletedAt: timestamp.FormatPtr(l.DeletedAt)}
}

func viewAccountLog(l domain.Log) apitypes.AccountLog {
	return apitypes.AccountLog{AccountId: l.OwnerID, AccountLogId: l.ID, Source: l.Source, Type: l.Type, Payload: l.Payload,
		IdempotencyKey: l.IdempotencyKey, CreatedAt: timestamp.Format(l.CreatedAt),
		UpdatedAt: timestamp.FormatPtr(l.UpdatedAt), DeletedAt: timestamp.FormatPtr(l.DeletedAt)}
}

// viewLog renders an entry as the document's shape of its owner's kind.
func viewLog(k domain.LogOwner, l domain.Log) any {
	if k == domain.AccountLogs {
		return viewAccountLog(l)
	}
	return viewPersonLog(l)
}

// Request bodies. The document (api/openapi.yaml) states their rules and has judged the
// body before a handler runs: types, required fields, lengths, the email, phone and URL
// patterns, the log source and type pattern, unknown fields. What stays here is what it
// cannot state: the normalisation of domains (a host name once normalised) and the
// payload's size as sent and its storability (domain.CheckPayload).

type personCreate struct {
	Name               string                   `json:"name"`
	Email              request.Nullable[string] `json:"email"`
	Domain             request.Nullable[string] `json:"domain"`
	PhoneNumber        request.Nullable[string] `json:"phoneNumber"`
	LinkedinProfileURL request.Nullable[string] `json:"linkedinProfileUrl"`
}

type personUpdate struct {
	Name               *string                  `json:"name"`
	Email              request.Nullable[string] `json:"email"`
	Domain             request.Nullable[string] `json:"domain"`
	PhoneNumber        request.Nullable[string] `json:"phoneNumber"`
	LinkedinProfileURL request.Nullable[string] `json:"linkedinProfileUrl"`
}

type logCreate struct {
	Source         string                   `json:"source"`
	Type           string                   `json:"type"`
	Payload        json.RawMessage          `json:"payload"` // as sent: numbers stay exact
	IdempotencyKey request.Nullable[string] `json:"idempotencyKey"`
}

// normalizeDomain normalises an optional domain from the body, failing on one that is
// not a host name.
func normalizeDomain(n request.Nullable[string]) (*string, error) {
	if n.Ptr() == nil {
		return nil, nil
	}
	d := domain.NormalizeDomain(n.Value)
	if d == "" {
		return nil, apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_string",
			Message: "Invalid domain: expected a host name such as example.com", Path: []any{"domain"}})
	}
	return &d, nil
}

// --- persons

func (h *Handlers) createPerson(c *fiber.Ctx) error {
	var in personCreate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	dom, err := normalizeDomain(in.Domain)
	if err != nil {
		return err
	}
	p, err := h.App.CreatePerson(c.UserContext(), tenant.From(c), app.NewPerson{Name: in.Name, Email: in.Email.Ptr(),
		Domain: dom, PhoneNumber: in.PhoneNumber.Ptr(), Linkedin: in.LinkedinProfileURL.Ptr()})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(viewPerson(p))
}

func (h *Handlers) getPerson(c *fiber.Ctx) error {
	id := c.Params("person_id")
	p, err := h.App.GetPerson(c.UserContext(), tenant.From(c), id)
	if err != nil {
		return err
	}
	return c.JSON(viewPerson(p))
}

func (h *Handlers) updatePerson(c *fiber.Ctx) error {
	var in personUpdate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	dom, err := normalizeDomain(in.Domain)
	if err != nil {
		return err
	}
	id := c.Params("person_id")
	p, err := h.App.UpdatePerson(c.UserContext(), tenant.From(c), id, domain.PersonPatch{
		Name: in.Name, SetEmail: in.Email.Set, Email: in.Email.Ptr(), SetDomain: in.Domain.Set, Domain: dom,
		SetPhone: in.PhoneNumber.Set, PhoneNumber: in.PhoneNumber.Ptr(),
		SetLinkedin: in.LinkedinProfileURL.Set, Linkedin: in.LinkedinProfileURL.Ptr()})
	if err != nil {
		return err
	}
	return c.JSON(viewPerson(p))
}

func (h *Handlers) deletePerson(c *fiber.Ctx) error {
	id := c.Params("person_id")
	if err := h.App.DeletePerson(c.UserContext(), tenant.From(c), id); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// page parses limit and cursor for a list of the given scope; the cursor holds one ID.
func (h *Handlers) page(c *fiber.Ctx, q *request.Query, scope ...string) (pagination.Params, string) {
	p := h.Cursors.Parse(q, pagination.Scope(append([]string{tenant.From(c)}, scope...)...))
	after, err := keyset.ParseID(p.After)
	if err != nil {
		q.Fail("cursor", "invalid_cursor", "Invalid cursor: "+err.Error())
	}
	return p, after
}

func (h *Handlers) searchPersons(c *fiber.Ctx) error {
	q := request.NewQuery(c)
	query := q.String("query")
	p, after := h.page(c, q, "persons_search", query)
	if err := q.Err(); err != nil {
		return err
	}
	persons, total, err := h.App.SearchPersons(c.UserContext(), tenant.From(c), query, after, p.Limit+1)
	if err != nil {
		return err
	}
	return c.JSON(pagination.Build(h.Cursors, p, pagination.Map(persons, viewPerson), total, func(v apitypes.Person) []string { return []string{v.PersonId} }))
}

// --- accounts

func (h *Handlers) createAccount(c *fiber.Ctx) error {
	var in apitypes.AccountCreate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	dom, err := normalizeDomain(request.Of(in.Domain))
	if err != nil {
		return err
	}
	a, err := h.App.CreateAccount(c.UserContext(), tenant.From(c), *dom, in.Name)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(viewAccount(a))
}

func (h *Handlers) getAccount(c *fiber.Ctx) error {
	id := c.Params("account_id") // its format: the document's pattern
	a, err := h.App.GetAccount(c.UserContext(), tenant.From(c), id)
	if err != nil {
		return err
	}
	return c.JSON(viewAccount(a))
}

func (h *Handlers) listAccounts(c *fiber.Ctx) error {
	q := request.NewQuery(c)
	emptyOnly := flag(q, "includeEmptyOnly")
	p, after := h.page(c, q, "accounts", boolKey(emptyOnly))
	if err := q.Err(); err != nil {
		return err
	}
	accounts, total, err := h.App.ListAccounts(c.UserContext(), tenant.From(c), emptyOnly, after, p.Limit+1)
	if err != nil {
		return err
	}
	return c.JSON(pagination.Build(h.Cursors, p, pagination.Map(accounts, viewAccountItem), &total,
		func(v apitypes.AccountListItem) []string { return []string{v.AccountId} }))
}

// flag reads a boolean query parameter whose values the document enumerates ("true",
// "false", "1", "0"; it refused any other): true for "true" and "1".
func flag(q *request.Query, name string) bool {
	v := q.String(name)
	return v == "true" || v == "1"
}

func boolKey(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// --- logs

// owner returns the owner ID of a log route: a person ID or an account ID (whose format
// the document states for the path).
func owner(c *fiber.Ctx, param string) string { return c.Params(param) }

func (h *Handlers) createLog(k domain.LogOwner, param string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ownerID := owner(c, param)
		var in logCreate
		if err := request.Decode(c, &in); err != nil {
			return err
		}
		payload, err := domain.CheckPayload(in.Payload)
		switch {
		case errors.Is(err, domain.ErrPayloadTooBig):
			return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "too_big",
				Message: err.Error(), Path: []any{"payload"}})
		case err != nil:
			return invalidPayload(err.Error())
		}
		l, created, err := h.App.CreateLog(c.UserContext(), k, tenant.From(c), ownerID, app.NewLog{Source: in.Source,
			Type: in.Type, Payload: payload, IdempotencyKey: in.IdempotencyKey.Ptr()})
		switch {
		case errors.Is(err, domain.ErrInvalidPayload):
			return invalidPayload("a value is beyond what the database stores (e.g. a number out of range)")
		case err != nil:
			return err
		}
		status := fiber.StatusOK
		if created {
			status = fiber.StatusCreated
		}
		return c.Status(status).JSON(viewLog(k, l))
	}
}

func (h *Handlers) getLog(k domain.LogOwner, param string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ownerID := owner(c, param)
		id := c.Params("log_id")
		l, err := h.App.GetLog(c.UserContext(), k, tenant.From(c), ownerID, id)
		if err != nil {
			return err
		}
		return c.JSON(viewLog(k, l))
	}
}

func (h *Handlers) deleteLog(k domain.LogOwner, param string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ownerID := owner(c, param)
		id := c.Params("log_id")
		if err := h.App.DeleteLog(c.UserContext(), k, tenant.From(c), ownerID, id); err != nil {
			return err
		}
		return c.SendStatus(fiber.StatusNoContent)
	}
}

func (h *Handlers) listLogs(k domain.LogOwner, param string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ownerID := owner(c, param)
		q := request.NewQuery(c)
		includeDeleted := flag(q, "includeDeleted")
		p, before := h.page(c, q, "logs", param, ownerID, boolKey(includeDeleted))
		if err := q.Err(); err != nil {
			return err
		}
		logs, total, err := h.App.ListLogs(c.UserContext(), k, tenant.From(c), ownerID, includeDeleted, before, p.Limit+1)
		if err != nil {
			return err
		}
		if k == domain.AccountLogs {
			return c.JSON(pagination.Build(h.Cursors, p, pagination.Map(logs, viewAccountLog), &total,
				func(v apitypes.AccountLog) []string { return []string{v.AccountLogId} }))
		}
		return c.JSON(pagination.Build(h.Cursors, p, pagination.Map(logs, viewPersonLog), &total,
			func(v apitypes.PersonLog) []string { return []string{v.PersonLogId} }))
	}
}

// invalidPayload is the 400 of a payload PostgreSQL cannot store as jsonb.
func invalidPayload(msg string) error {
	return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_type",
		Message: "Invalid payload: " + msg, Path: []any{"payload"}})
}
