package api_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// closeAll makes every object schema of the document refuse properties it does not
// list (unless it says what extra properties may hold), so that an example with a
// misspelt or invented field fails although response schemas are open.
func closeAll(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	for name, s := range doc.Components.Schemas {
		walkSchemas(s, name, seen, func(v *openapi3.Schema, _ string) {
			if len(v.Properties) > 0 && v.AdditionalProperties.Has == nil && v.AdditionalProperties.Schema == nil {
				closed := false
				v.AdditionalProperties.Has = &closed
			}
		})
	}
}

// checkExamples returns one error for each schema of components that has no example,
// each request body that has none (on its schema or media type), and each example that
// its schema refuses.
func checkExamples(doc *openapi3.T) []error {
	closeAll(doc)
	var errs []error
	for name, s := range doc.Components.Schemas {
		if s.Value.Example == nil {
			errs = append(errs, fmt.Errorf("schema %s has no example", name))
			continue
		}
		if err := s.Value.VisitJSON(s.Value.Example, openapi3.MultiErrors()); err != nil {
			errs = append(errs, fmt.Errorf("example of schema %s: %w", name, err))
		}
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody == nil {
				continue
			}
			for ct, mt := range op.RequestBody.Value.Content {
				ex := mt.Example
				if ex == nil && mt.Schema != nil {
					ex = mt.Schema.Value.Example
				}
				if ex == nil {
					errs = append(errs, fmt.Errorf("%s %s: request body %s has no example", method, path, ct))
					continue
				}
				if err := mt.Schema.Value.VisitJSON(ex, openapi3.MultiErrors()); err != nil {
					errs = append(errs, fmt.Errorf("%s %s: example of request body %s: %w", method, path, ct, err))
				}
			}
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

// Every request and response schema has a realistic example that its schema accepts, so
// that generated documentation, mocks and client tests start from valid data.
func TestExamples(t *testing.T) {
	for _, err := range checkExamples(loadDoc(t)) {
		t.Error(err)
	}
}

// The check fails on examples that do not match: a wrong type, a missing required
// field, an invented field, a timestamp without milliseconds, a schema without one.
func TestExamplesCheckFailsOnInvalidExamples(t *testing.T) {
	doc := loadDoc(t)
	s := doc.Components.Schemas
	s["Topic"].Value.Example = map[string]any{"topicId": "topic_01kjpx9g9mfy6s8s1d7z6ek2x1", "title": 7}
	person := map[string]any{}
	for k, v := range s["Person"].Value.Example.(map[string]any) {
		person[k] = v
	}
	person["nickname"] = "Ada"
	s["Person"].Value.Example = person
	s["Timestamp"].Value.Example = "2026-03-02T09:15:27Z"
	s["Count"].Value.Example = nil
	errs := checkExamples(doc)
	var text []string
	for _, err := range errs {
		text = append(text, err.Error())
	}
	all := strings.Join(text, "\n")
	for _, want := range []string{"example of schema Topic", "example of schema Person", "example of schema Timestamp", "schema Count has no example"} {
		if !strings.Contains(all, want) {
			t.Errorf("no error %q among:\n%s", want, all)
		}
	}
	if strings.Contains(all, "example of schema Account:") {
		t.Errorf("valid example reported:\n%s", all)
	}
}
