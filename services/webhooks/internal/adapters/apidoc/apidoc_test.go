package apidoc_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/customerapi/platform/api"
	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/apidoc"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
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
	d := apidoc.New()
	types, err := d.Types()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(enum)
	slices.Sort(types)
	if !slices.Equal(enum, types) {
		t.Fatalf("WebhookEventType lists %v but WebhookEvent's payload discriminator maps %v", enum, types)
	}
	for _, typ := range types {
		p, ok, err := testPayload(d, typ)
		if err != nil || !ok || !json.Valid(p) || string(p) == "null" {
			t.Errorf("payload of %s = %s, %v, %v; want the schema's example", typ, p, ok, err)
		}
	}
	if _, ok, _ := testPayload(d, "page.deleted"); ok {
		t.Error("an event type outside the document has a payload")
	}
}

// testPayload is the payload of a test event of an event type (app.Service.SendTestEvent).
func testPayload(doc *apidoc.Document, eventType string) (json.RawMessage, bool, error) {
	example, ok, err := doc.Example(eventType)
	if err != nil || !ok {
		return nil, ok, err
	}
	p, err := domain.TestPayload(eventType, example)
	return p, true, err
}

// A test event points at no real object: each ID of its payload is the fake ID of its
// kind (prefix_ and 26 zeros, a valid TypeID that ids.New never makes), and every other
// field is the document's example unchanged.
func TestTestPayloadsAreTheExamplesWithFakeIDs(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	d := apidoc.New()
	mapping := doc.Components.Schemas["WebhookEvent"].Value.Properties["payload"].Value.Discriminator.Mapping
	for typ, ref := range mapping {
		b, _ := json.Marshal(doc.Components.Schemas[strings.TrimPrefix(ref.Ref, "#/components/schemas/")].Value.Example)
		var example, got map[string]any
		_ = json.Unmarshal(b, &example)
		p, _, err := testPayload(d, typ)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(p, &got); err != nil {
			t.Fatal(err)
		}
		faked := 0
		for k, v := range example {
			if !domain.IsIDField(k, v) {
				if !reflect.DeepEqual(got[k], v) {
					t.Errorf("%s: field %s = %v; want the example's %v", typ, k, got[k], v)
				}
				continue
			}
			faked++
			prefix := v.(string)[:strings.LastIndexByte(v.(string), '_')]
			if want := prefix + "_00000000000000000000000000"; got[k] != want || !ids.Valid(prefix, want) {
				t.Errorf("%s: ID field %s = %v; want the fake ID %s (a valid TypeID)", typ, k, got[k], want)
			}
		}
		if faked == 0 || len(got) != len(example) {
			t.Errorf("%s: %d IDs faked in %v; want every ID of the example %v faked and no field added", typ, faked, got, example)
		}
	}
}
