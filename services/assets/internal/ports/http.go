// Package ports serves the assets context over HTTP: streamed multipart uploads, the
// lists and lifecycle operations, and signed downloads. It maps requests to use cases and
// results to the API's shapes.
package ports

import (
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/inflight"
	"github.com/customerapi/platform/libs/keyset"
	"github.com/customerapi/platform/libs/pagination"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/services/assets/internal/app"
	"github.com/customerapi/platform/services/assets/internal/domain"
)

// Handlers serve the assets routes. The OpenAPI document judged every request before it
// gets here (request.Document), except an upload's fields, which the upload handler has
// it judge as it reads them.
type Handlers struct {
	App      *app.Service
	Document *request.Document
	Cursors  *pagination.Codec
	Log      *slog.Logger
	// TransferTimeout bounds reading one upload and writing one download.
	TransferTimeout time.Duration
	// Uploads caps the uploads in flight per tenant and in the process (nil: no cap).
	Uploads *inflight.Limiter
}

// FilesRoute is the service's path of signed downloads (the gateway maps the public
// /v0/asset_files/{token} to it). It lies outside /v0, where every request needs a tenant.
const FilesRoute = "/files/:token"

// Register mounts the tenant-scoped routes on api (the /v0 group) and the signed
// downloads on root, behind gatewayOnly (the gateway's signature, without a tenant).
func (h *Handlers) Register(api, root fiber.Router, gatewayOnly fiber.Handler) {
	api.Post("/assets", h.upload)
	api.Get("/assets", h.list(domain.Active, "assets"))
	api.Get("/assets/trash", h.list(domain.Trashed, "assets/trash"))
	api.Get("/assets/:asset_id", h.get)
	// The document middleware reads the JSON bodies of trash and restore (at most 1 MiB
	// of them); a DELETE has none to read, so bufferJSON bounds what is sent.
	api.Post("/assets/:asset_id/trash", h.trash)
	api.Post("/assets/:asset_id/restore", h.restore)
	api.Delete("/assets/:asset_id", bufferJSON, h.delete)
	root.Get(FilesRoute, gatewayOnly, h.download) // Fiber serves HEAD with it
}

func (h *Handlers) respond(c *fiber.Ctx, status int, a domain.Asset) error {
	return c.Status(status).JSON(view(a, h.App.Links(a)))
}

func (h *Handlers) get(c *fiber.Ctx) error {
	a, err := h.App.Get(c.UserContext(), tenant.From(c), c.Params("asset_id"))
	if err != nil {
		return err
	}
	return h.respond(c, fiber.StatusOK, a)
}

// trash and restore take no body, or an empty object: the document judged it.
func (h *Handlers) trash(c *fiber.Ctx) error {
	a, err := h.App.Trash(c.UserContext(), tenant.From(c), c.Params("asset_id"))
	if err != nil {
		return err
	}
	return h.respond(c, fiber.StatusOK, a)
}

func (h *Handlers) restore(c *fiber.Ctx) error {
	a, err := h.App.Restore(c.UserContext(), tenant.From(c), c.Params("asset_id"))
	if err != nil {
		return err
	}
	return h.respond(c, fiber.StatusOK, a)
}

func (h *Handlers) delete(c *fiber.Ctx) error {
	if err := h.App.Delete(c.UserContext(), tenant.From(c), c.Params("asset_id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// list serves a list of the assets in state, filtered by assetType and query.
func (h *Handlers) list(state domain.State, name string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		q := request.NewQuery(c)
		f := domain.Filter{Type: q.String("assetType"), Query: q.String("query")}
		tenantID := tenant.From(c)
		p := h.Cursors.Parse(q, pagination.Scope(tenantID, name, f.Type, f.Query))
		after, err := keyset.ParseID(p.After)
		if err != nil {
			q.Fail("cursor", "invalid_cursor", "Invalid cursor: "+err.Error())
		}
		if err := q.Err(); err != nil {
			return err
		}
		assets, total, err := h.App.List(c.UserContext(), tenantID, state, f, after, p.Limit+1)
		if err != nil {
			return err
		}
		views := make([]apitypes.Asset, len(assets))
		for i, a := range assets {
			views[i] = view(a, h.App.Links(a))
		}
		return c.JSON(pagination.Build(h.Cursors, p, views, &total, func(v apitypes.Asset) []string { return []string{v.AssetId} }))
	}
}
