package apitypes_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	yaml "github.com/oasdiff/yaml3"

	"github.com/customerapi/platform/api"
	"github.com/customerapi/platform/api/apitypes"
)

// The generated types hold the document's examples exactly: decoded strictly and encoded
// again, each example comes back byte for byte, its fields in the document's order (the
// overlay's x-order) and timestamps as written.
func TestTypesRoundTripTheDocumentsExamples(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal(api.Spec, &doc); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{
		"Topic":               &apitypes.Topic{},
		"Page":                &apitypes.Page{},
		"WebhookSubscription": &apitypes.WebhookSubscription{},
		"Event":               &apitypes.Event{},
		"Person":              &apitypes.Person{},
		"Asset":               &apitypes.Asset{},
		"ErrorEnvelope":       &apitypes.ErrorEnvelope{},
	} {
		ex := find(&doc, "components", "schemas", name, "example")
		if ex == nil {
			t.Fatalf("%s has no example in the document", name)
		}
		var want bytes.Buffer
		writeJSON(&want, ex)
		dec := json.NewDecoder(bytes.NewReader(want.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Fatalf("%s's example does not decode into apitypes.%s: %v", name, name, err)
		}
		got, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("apitypes.%s changed its example:\n got %s\nwant %s", name, got, want.Bytes())
		}
	}
}

func find(n *yaml.Node, keys ...string) *yaml.Node {
	if n.Kind == yaml.DocumentNode {
		n = n.Content[0]
	}
	for _, k := range keys {
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}

// writeJSON renders a YAML node as compact JSON, keeping the order of its keys.
func writeJSON(b *bytes.Buffer, n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			b.Write(k)
			b.WriteByte(':')
			writeJSON(b, n.Content[i+1])
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, c)
		}
		b.WriteByte(']')
	default:
		switch n.Tag {
		case "!!null":
			b.WriteString("null")
		case "!!bool", "!!int", "!!float":
			b.WriteString(n.Value)
		default:
			s, _ := json.Marshal(n.Value)
			b.Write(s)
		}
	}
}

// The overlay's other rules hold in the generated code: no number is a float32 (which
// rounds Unix milliseconds) and no field of a body is a time.Time (which would encode up
// to nine fraction digits, not the document's three); only query parameters, which the
// services parse themselves, keep time.Time.
func TestNoFloat32AndNoTimeInBodies(t *testing.T) {
	src, err := os.ReadFile("types.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(src), "\n") {
		if strings.Contains(line, "float32") {
			t.Errorf("types.gen.go:%d: a float32 (a number without format: double in the overlay): %s", i+1, line)
		}
		if strings.Contains(line, "time.Time") && !strings.Contains(line, `form:"`) {
			t.Errorf("types.gen.go:%d: a time.Time in a body (a date-time the overlay did not make a string): %s", i+1, line)
		}
	}
}
