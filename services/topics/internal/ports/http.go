// Package ports serves the topics context over HTTP: it maps requests to use cases and
// results to the API's shapes, and nothing else.
package ports

import (
	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/keyset"
	"github.com/customerapi/platform/libs/pagination"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/topics/internal/app"
	"github.com/customerapi/platform/services/topics/internal/domain"
)

// Handlers serve the topics routes. The OpenAPI document judged every request before it
// gets here (request.Document): handlers decode bodies and check nothing it states.
type Handlers struct {
	App     *app.Service
	Cursors *pagination.Codec
}

// Register mounts the routes on the tenant-scoped /v0 router.
func (h *Handlers) Register(r fiber.Router) {
	r.Get("/topics", h.listTopics)
	r.Post("/topics", h.createTopic)
	r.Get("/topics/:topic_id", h.getTopic)
	r.Patch("/topics/:topic_id", h.updateTopic)
	r.Delete("/topics/:topic_id", h.deleteTopic)
	r.Get("/topics/:topic_id/entries", h.listEntries)
	r.Post("/topics/:topic_id/entries", h.createEntry)
	r.Get("/topics/:topic_id/entries/:topic_entry_id", h.getEntry)
	r.Patch("/topics/:topic_id/entries/:topic_entry_id", h.updateEntry)
	r.Delete("/topics/:topic_id/entries/:topic_entry_id", h.deleteEntry)
}

// --- shapes of the API

// The answers are the document's shapes, generated in api/apitypes.

func viewEntry(e domain.Entry) apitypes.TopicEntry {
	return apitypes.TopicEntry{TopicEntryId: e.ID, TopicId: e.TopicID, SortOrder: int(e.SortOrder),
		Content:   apitypes.TopicEntryContent{Type: apitypes.TopicEntryContentType(e.Content.Type), Content: e.Content.Text},
		CreatedAt: timestamp.Format(e.CreatedAt), UpdatedAt: timestamp.Format(e.UpdatedAt)}
}

func viewTopic(t domain.Topic) apitypes.Topic {
	v := apitypes.Topic{TopicId: t.ID, Title: t.Title, Purpose: t.Purpose, SortOrder: int(t.SortOrder), IsDefault: t.IsDefault,
		CreatedAt: timestamp.Format(t.CreatedAt), UpdatedAt: timestamp.Format(t.UpdatedAt), Entries: []apitypes.TopicEntry{}}
	for _, e := range t.Entries {
		v.Entries = append(v.Entries, viewEntry(e))
	}
	return v
}

// The bodies, as the document's TopicCreate, TopicUpdate, TopicEntryCreate and
// TopicEntryUpdate describe them (and judged them).

type topicCreate struct {
	Title     string                   `json:"title"`
	SortOrder *int64                   `json:"sortOrder"`
	Purpose   request.Nullable[string] `json:"purpose"`
	IsDefault *bool                    `json:"isDefault"`
}

type topicUpdate struct {
	Title     *string                  `json:"title"`
	SortOrder *int64                   `json:"sortOrder"`
	Purpose   request.Nullable[string] `json:"purpose"`
	IsDefault *bool                    `json:"isDefault"`
}

type entryCreate struct {
	Content   apitypes.TopicEntryContent `json:"content"`
	SortOrder *int64                     `json:"sortOrder"`
}

type entryUpdate struct {
	Content   *apitypes.TopicEntryContent `json:"content"`
	SortOrder *int64                      `json:"sortOrder"`
}

// --- handlers

func (h *Handlers) createTopic(c *fiber.Ctx) error {
	var in topicCreate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	t, err := h.App.CreateTopic(c.UserContext(), tenant.From(c), app.NewTopic{
		Title: in.Title, Purpose: in.Purpose.Ptr(), SortOrder: request.Value(in.SortOrder), IsDefault: request.Value(in.IsDefault)})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(viewTopic(t))
}

func (h *Handlers) getTopic(c *fiber.Ctx) error {
	t, err := h.App.GetTopic(c.UserContext(), tenant.From(c), c.Params("topic_id"))
	if err != nil {
		return err
	}
	return c.JSON(viewTopic(t))
}

func (h *Handlers) updateTopic(c *fiber.Ctx) error {
	var in topicUpdate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	t, err := h.App.UpdateTopic(c.UserContext(), tenant.From(c), c.Params("topic_id"), domain.TopicPatch{
		Title: in.Title, SetPurpose: in.Purpose.Set, Purpose: in.Purpose.Ptr(), SortOrder: in.SortOrder, IsDefault: in.IsDefault})
	if err != nil {
		return err
	}
	return c.JSON(viewTopic(t))
}

func (h *Handlers) deleteTopic(c *fiber.Ctx) error {
	if err := h.App.DeleteTopic(c.UserContext(), tenant.From(c), c.Params("topic_id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// page parses limit and cursor for a list of the given scope.
func (h *Handlers) page(c *fiber.Ctx, scope ...string) (pagination.Params, *keyset.Position, error) {
	q := request.NewQuery(c)
	p := h.Cursors.Parse(q, pagination.Scope(append([]string{tenant.From(c)}, scope...)...))
	after, err := keyset.Parse(p.After)
	if err != nil {
		q.Fail("cursor", "invalid_cursor", "Invalid cursor: "+err.Error())
	}
	return p, after, q.Err()
}

func after(sortOrder int, id string) []string {
	return keyset.Position{Key: int64(sortOrder), ID: id}.Keys()
}

func (h *Handlers) listTopics(c *fiber.Ctx) error {
	p, pos, err := h.page(c, "topics")
	if err != nil {
		return err
	}
	topics, total, err := h.App.ListTopics(c.UserContext(), tenant.From(c), pos, p.Limit+1)
	if err != nil {
		return err
	}
	views := pagination.Map(topics, viewTopic)
	return c.JSON(pagination.Build(h.Cursors, p, views, &total, func(v apitypes.Topic) []string { return after(v.SortOrder, v.TopicId) }))
}

func (h *Handlers) createEntry(c *fiber.Ctx) error {
	var in entryCreate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	e, err := h.App.AddEntry(c.UserContext(), tenant.From(c), c.Params("topic_id"), app.NewEntry{
		Content: domain.Content{Type: string(in.Content.Type), Text: in.Content.Content}, SortOrder: request.Value(in.SortOrder)})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(viewEntry(e))
}

func (h *Handlers) getEntry(c *fiber.Ctx) error {
	e, err := h.App.GetEntry(c.UserContext(), tenant.From(c), c.Params("topic_id"), c.Params("topic_entry_id"))
	if err != nil {
		return err
	}
	return c.JSON(viewEntry(e))
}

func (h *Handlers) updateEntry(c *fiber.Ctx) error {
	var in entryUpdate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	p := domain.EntryPatch{SortOrder: in.SortOrder}
	if in.Content != nil {
		p.Content = &domain.Content{Type: string(in.Content.Type), Text: in.Content.Content}
	}
	e, err := h.App.UpdateEntry(c.UserContext(), tenant.From(c), c.Params("topic_id"), c.Params("topic_entry_id"), p)
	if err != nil {
		return err
	}
	return c.JSON(viewEntry(e))
}

func (h *Handlers) deleteEntry(c *fiber.Ctx) error {
	if err := h.App.DeleteEntry(c.UserContext(), tenant.From(c), c.Params("topic_id"), c.Params("topic_entry_id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (h *Handlers) listEntries(c *fiber.Ctx) error {
	topicID := c.Params("topic_id")
	p, pos, err := h.page(c, "topic_entries", topicID)
	if err != nil {
		return err
	}
	entries, total, err := h.App.ListEntries(c.UserContext(), tenant.From(c), topicID, pos, p.Limit+1)
	if err != nil {
		return err
	}
	views := pagination.Map(entries, viewEntry)
	return c.JSON(pagination.Build(h.Cursors, p, views, &total, func(v apitypes.TopicEntry) []string { return after(v.SortOrder, v.TopicEntryId) }))
}
