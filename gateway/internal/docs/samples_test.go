package docs_test

import (
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/customerapi/platform/api"
	"github.com/customerapi/platform/gateway/internal/docs"
)

// Every operation of the reference shows curl, Go and TypeScript, calling the address
// the server is reached at; samples and document must agree operation for operation.
func TestEveryOperationHasCodeSamples(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	const base = "https://api.acme.test"
	if err := docs.AddCodeSamples(doc, api.CodeSamples, api.SampleBaseURL, base+"/"); err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			n++
			samples, _ := op.Extensions["x-codeSamples"].([]docs.CodeSample)
			var labels []string
			for _, s := range samples {
				labels = append(labels, s.Label)
				if strings.Contains(s.Source, api.SampleBaseURL) || !strings.Contains(s.Source, `"`+base) && !strings.Contains(s.Source, `'`+base) {
					t.Errorf("%s %s: the %s sample does not call %s:\n%s", method, path, s.Label, base, s.Source)
				}
			}
			if strings.Join(labels, ",") != "curl,Go,TypeScript" {
				t.Errorf("%s %s: samples %v, want curl, Go and TypeScript", method, path, labels)
			}
		}
	}
	if n < 60 {
		t.Fatalf("only %d operations", n)
	}

	// Samples that do not match the document are refused: the generated file is stale.
	for name, samples := range map[string]string{
		"an operation without samples":    `{}`,
		"samples of an unknown operation": strings.Replace(string(api.CodeSamples), "{", `{"noSuchOperation": [],`, 1),
		"not JSON":                        `[`,
	} {
		doc, _ := openapi3.NewLoader().LoadFromData(api.Spec)
		if err := docs.AddCodeSamples(doc, []byte(samples), api.SampleBaseURL, base); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
