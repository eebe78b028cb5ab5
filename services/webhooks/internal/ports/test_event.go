package ports

import (
	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/tenant"
)

// testEventRequest is the body of POST …/test.
type testEventRequest struct {
	EventType string `json:"eventType" validate:"required,oneof=page.version.created page.version.processed page.version.published form.submitted form.enriched form.enrichment_failed"`
}

// RegisterTestEvent mounts POST /webhook_subscriptions/:subscription_id/test.
func (h *Handlers) RegisterTestEvent(r fiber.Router) {
	r.Post("/webhook_subscriptions/:subscription_id/test", h.sendTestEvent)
}

func (h *Handlers) sendTestEvent(c *fiber.Ctx) error {
	var in testEventRequest
	if err := h.Validator.Body(c, &in); err != nil {
		return err
	}
	d, err := h.App.SendTestEvent(c.UserContext(), tenant.From(c), c.Params("subscription_id"), in.EventType)
	if err != nil {
		return mapError(err)
	}
	return c.Status(fiber.StatusAccepted).JSON(viewDelivery(d))
}
