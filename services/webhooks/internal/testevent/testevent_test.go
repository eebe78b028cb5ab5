package testevent_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/customerapi/platform/api"
	"github.com/customerapi/platform/services/webhooks/internal/testevent"
)

// Every event type the document lets a client choose (WebhookEventType, the enum of the
// test operation's eventType) has a payload example, and no other type has one.
func TestEveryEventTypeOfTheDocumentHasAnExamplePayload(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	var enum []string
	for _, v := range doc.Components.Schemas["WebhookEventType"].Value.Enum {
		enum = append(enum, v.(string))
	}
	types, err := testevent.Types()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(enum)
	slices.Sort(types)
	if !slices.Equal(enum, types) {
		t.Fatalf("WebhookEventType lists %v but WebhookEvent's payload discriminator maps %v", enum, types)
	}
	for _, typ := range types {
		p, ok, err := testevent.Payload(typ)
		if err != nil || !ok || !json.Valid(p) || string(p) == "null" {
			t.Errorf("payload of %s = %s, %v, %v; want the schema's example", typ, p, ok, err)
		}
	}
	if _, ok, _ := testevent.Payload("page.deleted"); ok {
		t.Error("an event type outside the document has a payload")
	}
}
