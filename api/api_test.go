package api_test

import (
	"context"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/customerapi/platform/api"
)

func TestDocumentIsValid(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if doc.Info.Version != "0.0.1" {
		t.Fatalf("version = %s, want 0.0.1 as the spec names", doc.Info.Version)
	}
	// The merge keys expand: every operation documents the standard errors.
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, code := range []string{"400", "401", "403", "429", "500", "503"} {
				if path != "/v0/openapi.json" && op.Responses.Value(code) == nil {
					t.Errorf("%s %s does not document %s", method, path, code)
				}
			}
		}
	}
}
