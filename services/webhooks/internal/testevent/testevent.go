// Package testevent makes the payloads of test events from the OpenAPI document: the
// example of each event type's payload schema, found through the discriminator of
// WebhookEvent, so a test event has exactly the shape the document promises.
package testevent

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/customerapi/platform/api"
)

// examples maps each event type to its payload example, read from the document once.
var examples = sync.OnceValues(func() (map[string]json.RawMessage, error) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	event := doc.Components.Schemas["WebhookEvent"]
	if event == nil || event.Value.Properties["payload"] == nil || event.Value.Properties["payload"].Value.Discriminator == nil {
		return nil, fmt.Errorf("the document has no WebhookEvent payload discriminator")
	}
	out := map[string]json.RawMessage{}
	for typ, ref := range event.Value.Properties["payload"].Value.Discriminator.Mapping {
		name := strings.TrimPrefix(ref.Ref, "#/components/schemas/")
		s := doc.Components.Schemas[name]
		if s == nil || s.Value.Example == nil {
			return nil, fmt.Errorf("event type %s: schema %s has no example", typ, name)
		}
		b, err := json.Marshal(s.Value.Example)
		if err != nil {
			return nil, fmt.Errorf("event type %s: %w", typ, err)
		}
		out[typ] = b
	}
	return out, nil
})

// Types lists the event types that have a test payload.
func Types() ([]string, error) {
	m, err := examples()
	if err != nil {
		return nil, err
	}
	types := make([]string, 0, len(m))
	for t := range m {
		types = append(types, t)
	}
	return types, nil
}

// Payload returns the example payload of an event type; ok is false for an unknown type.
func Payload(eventType string) (payload json.RawMessage, ok bool, err error) {
	m, err := examples()
	if err != nil {
		return nil, false, err
	}
	p, ok := m[eventType]
	return p, ok, nil
}
