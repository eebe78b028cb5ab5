// Package testevent makes the payloads of test events from the OpenAPI document: the
// example of each event type's payload schema, found through the discriminator of
// WebhookEvent, so a test event has exactly the shape the document promises, with every
// ID replaced by a fake one (FakeID) that names no object of any tenant.
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
		example, ok := s.Value.Example.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("event type %s: the example of schema %s is not an object", typ, name)
		}
		b, err := json.Marshal(fakeIDs(example))
		if err != nil {
			return nil, fmt.Errorf("event type %s: %w", typ, err)
		}
		out[typ] = b
	}
	return out, nil
})

// FakeSuffix is the suffix of every ID in a test event: 26 zeros, the nil UUID as a
// TypeID, which ids.New never makes (its IDs are UUIDv7s, whose time is never zero).
const FakeSuffix = "00000000000000000000000000"

// FakeID returns the fake ID of a test event with the prefix of id: the prefix, an
// underscore and FakeSuffix (page_01khjz… becomes page_00000000000000000000000000).
func FakeID(id string) string {
	return id[:strings.LastIndexByte(id, '_')+1] + FakeSuffix
}

// IsIDField reports whether a payload's field holds an ID that a test event fakes: a
// field whose name ends in "Id" and whose value is a TypeID (a prefix and an underscore).
func IsIDField(name string, value any) bool {
	s, ok := value.(string)
	return ok && strings.HasSuffix(name, "Id") && strings.Contains(s, "_")
}

// fakeIDs returns a copy of payload whose ID fields (IsIDField), in nested objects too,
// hold FakeID.
func fakeIDs(payload map[string]any) map[string]any {
	out := make(map[string]any, len(payload))
	for k, v := range payload {
		if IsIDField(k, v) {
			v = FakeID(v.(string))
		} else if m, ok := v.(map[string]any); ok {
			v = fakeIDs(m)
		}
		out[k] = v
	}
	return out
}

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

// Payload returns the test payload of an event type, its schema's example with fake IDs
// (FakeID); ok is false for an unknown type.
func Payload(eventType string) (payload json.RawMessage, ok bool, err error) {
	m, err := examples()
	if err != nil {
		return nil, false, err
	}
	p, ok := m[eventType]
	return p, ok, nil
}

// PayloadSchema is an event type's payload schema in the document: its component's name
// and the schema (OpenAPI 3.0, JSON; nested references point into /v0/openapi.json).
type PayloadSchema struct {
	Name   string
	Schema json.RawMessage
}

// payloadSchemas maps each event type to its payload schema, read from the document once.
var payloadSchemas = sync.OnceValues(func() (map[string]PayloadSchema, error) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	event := doc.Components.Schemas["WebhookEvent"]
	if event == nil || event.Value.Properties["payload"] == nil || event.Value.Properties["payload"].Value.Discriminator == nil {
		return nil, fmt.Errorf("the document has no WebhookEvent payload discriminator")
	}
	out := map[string]PayloadSchema{}
	for typ, ref := range event.Value.Properties["payload"].Value.Discriminator.Mapping {
		name := strings.TrimPrefix(ref.Ref, "#/components/schemas/")
		s := doc.Components.Schemas[name]
		if s == nil {
			return nil, fmt.Errorf("event type %s: no schema %s", typ, name)
		}
		b, err := json.Marshal(s.Value)
		if err != nil {
			return nil, err
		}
		out[typ] = PayloadSchema{Name: name, Schema: b}
	}
	return out, nil
})

// PayloadSchemas returns the payload schema of every event type of the document.
func PayloadSchemas() (map[string]PayloadSchema, error) { return payloadSchemas() }
