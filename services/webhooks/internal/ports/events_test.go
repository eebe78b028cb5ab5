package ports

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/jsonenc"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// An event's answer shows its body as the document's WebhookEvent: decoded and encoded
// again, the body of a real event and of a test event are the very bytes the deliveries send.
func TestEventAnswerKeepsTheDeliveryBody(t *testing.T) {
	env := events.Envelope{ID: "evt_1", Type: "person.created", OccurredAt: time.Date(2026, 3, 5, 16, 32, 10, 221537000, time.UTC),
		Payload: json.RawMessage(`{"type":"person.created","personId":"p_1","note":"<&> é","n":1.5e300,"z":{"b":1,"a":[true,null]}}`)}
	for _, render := range []func(events.Envelope) ([]byte, error){domain.NewBody, domain.NewTestBody} {
		body, err := render(env)
		if err != nil {
			t.Fatal(err)
		}
		v, err := viewEvent(domain.Event{ID: env.ID, Type: env.Type, OccurredAt: env.OccurredAt, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := jsonenc.Marshal(v.Body); err != nil || !bytes.Equal(got, body) {
			t.Errorf("the answer's body is %s (%v), want the delivery's %s", got, err, body)
		}
	}
}
