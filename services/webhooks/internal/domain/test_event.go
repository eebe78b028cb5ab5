package domain

import (
	"encoding/json"
	"fmt"
	"strings"
)

// EventTypes reads the event types' payloads from the API document.
type EventTypes interface {
	// Example returns the example of an event type's payload schema; ok is false for a
	// type the document does not map.
	Example(eventType string) (example map[string]any, ok bool, err error)
	// PayloadSchemas returns the payload schema of every event type of the document.
	PayloadSchemas() (map[string]PayloadSchema, error)
}

// PayloadSchema is an event type's payload schema in the document: its component's name
// and the schema (OpenAPI 3.0, as JSON decodes it; nested references point into
// /v0/openapi.json).
type PayloadSchema struct {
	Name   string
	Schema map[string]any
}

// TestPayload is the payload of a test event made from the example of its type's payload
// schema: the example with every ID replaced by a fake one (FakeID) that names no object
// of any tenant, so a test event has exactly the shape the document promises.
func TestPayload(eventType string, example map[string]any) (json.RawMessage, error) {
	b, err := json.Marshal(fakeIDs(example))
	if err != nil {
		return nil, fmt.Errorf("event type %s: %w", eventType, err)
	}
	return b, nil
}

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
