// Package apidoc reads the event types' payloads from the OpenAPI document: the schema
// and the example of each event type's payload, found through the discriminator of
// WebhookEvent (domain.EventTypes).
package apidoc

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/customerapi/platform/api"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// Document reads api.Spec once for each of its answers.
type Document struct {
	examples func() (map[string]map[string]any, error)
	schemas  func() (map[string]domain.PayloadSchema, error)
}

// New returns a Document of api.Spec.
func New() *Document {
	return &Document{examples: sync.OnceValues(examples), schemas: sync.OnceValues(payloadSchemas)}
}

// payloads calls fn with each event type of the document, its payload schema's component
// name and the schema (nil when the document has none of that name).
func payloads(fn func(typ, name string, s *openapi3.SchemaRef) error) error {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		return fmt.Errorf("load the OpenAPI document: %w", err)
	}
	event := doc.Components.Schemas["WebhookEvent"]
	if event == nil || event.Value.Properties["payload"] == nil || event.Value.Properties["payload"].Value.Discriminator == nil {
		return fmt.Errorf("the document has no WebhookEvent payload discriminator")
	}
	for typ, ref := range event.Value.Properties["payload"].Value.Discriminator.Mapping {
		name := strings.TrimPrefix(ref.Ref, "#/components/schemas/")
		if err := fn(typ, name, doc.Components.Schemas[name]); err != nil {
			return err
		}
	}
	return nil
}

// examples maps each event type to its payload example.
func examples() (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	err := payloads(func(typ, name string, s *openapi3.SchemaRef) error {
		if s == nil || s.Value.Example == nil {
			return fmt.Errorf("event type %s: schema %s has no example", typ, name)
		}
		example, ok := s.Value.Example.(map[string]any)
		if !ok {
			return fmt.Errorf("event type %s: the example of schema %s is not an object", typ, name)
		}
		out[typ] = example
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// payloadSchemas maps each event type to its payload schema.
func payloadSchemas() (map[string]domain.PayloadSchema, error) {
	out := map[string]domain.PayloadSchema{}
	err := payloads(func(typ, name string, s *openapi3.SchemaRef) error {
		if s == nil {
			return fmt.Errorf("event type %s: no schema %s", typ, name)
		}
		b, err := json.Marshal(s.Value)
		if err != nil {
			return err
		}
		p := domain.PayloadSchema{Name: name}
		err = json.Unmarshal(b, &p.Schema)
		out[typ] = p
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Example returns the example of an event type's payload schema; ok is false for an
// unknown type.
func (d *Document) Example(eventType string) (example map[string]any, ok bool, err error) {
	m, err := d.examples()
	if err != nil {
		return nil, false, err
	}
	example, ok = m[eventType]
	return example, ok, nil
}

// PayloadSchemas returns the payload schema of every event type of the document.
func (d *Document) PayloadSchemas() (map[string]domain.PayloadSchema, error) { return d.schemas() }
