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
}
