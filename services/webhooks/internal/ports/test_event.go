package ports

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// sendTestEvent queues a test event of the chosen type for one subscription. The document
// judged the body (WebhookTestEventRequest: eventType is required and one of WebhookEventType).
func (h *Handlers) sendTestEvent(c *fiber.Ctx) error {
	var in apitypes.WebhookTestEventRequest
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	d, err := h.App.SendTestEvent(c.UserContext(), tenant.From(c), c.Params("subscription_id"), string(in.EventType))
	switch {
	case errors.Is(err, domain.ErrSubscriptionInactive):
		return apierror.Conflict("the subscription is not active; activate it before sending it a test event")
	case err != nil:
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(viewDelivery(d))
}
