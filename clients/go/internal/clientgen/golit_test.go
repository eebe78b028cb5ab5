package main

import (
	"go/ast"
	"strings"
	"testing"
)

// literalClient declares the kinds of types oapi-codegen writes.
const literalClient = `package customerapi

type Kind string
type Name = string
type Score float32
type Tags []string
type Union struct{ union json.RawMessage }
type Thing struct {
	Name   Name              ` + "`json:\"name\"`" + `
	Kind   *Kind             ` + "`json:\"kind,omitempty\"`" + `
	Score  *float32          ` + "`json:\"score,omitempty\"`" + `
	Count  *int              ` + "`json:\"count\"`" + `
	Tags   *Tags             ` + "`json:\"tags,omitempty\"`" + `
	Extra  map[string]any    ` + "`json:\"extra\"`" + `
	When   *time.Time        ` + "`json:\"when,omitempty\"`" + `
	Either *Union            ` + "`json:\"either,omitempty\"`" + `
	Parent *Thing            ` + "`json:\"parent,omitempty\"`" + `
}
`

// The Go samples write the document's examples as typed values: pointers through Ptr
// (with the type when an untyped constant would infer another), named types converted,
// nested structs with &, null and unions left out, and an unknown field refused.
func TestLiteralWritesTypedValues(t *testing.T) {
	c, err := parseClient([]byte(literalClient))
	if err != nil {
		t.Fatal(err)
	}
	ex := map[string]any{"name": "n", "kind": "k", "score": 87.5, "count": nil, "tags": []any{"a"},
		"extra": map[string]any{"b": true}, "when": "2026-01-02T03:04:05Z", "either": map[string]any{"x": 1.0},
		"parent": map[string]any{"name": "p"}}
	imports := map[string]bool{}
	got, err := c.literal(&ast.Ident{Name: "Thing"}, ex, 0, imports)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`customerapi.Thing{`, `Name: "n"`, `Kind: customerapi.Ptr(customerapi.Kind("k"))`,
		`Score: customerapi.Ptr[float32](87.5)`, `Tags: &customerapi.Tags{"a"}`, `Extra: map[string]any{"b": true}`,
		`When: customerapi.Ptr(time.Date(2026, time.January, 2, 3, 4, 5, 0, time.UTC))`,
		`Parent: &customerapi.Thing{Name: "p"}`} {
		if !strings.Contains(got, want) {
			t.Errorf("the literal lacks %s:\n%s", want, got)
		}
	}
	for _, absent := range []string{"Count", "Either"} {
		if strings.Contains(got, absent+":") {
			t.Errorf("%s (null, a union) must be left out:\n%s", absent, got)
		}
	}
	if !imports[`"time"`] {
		t.Errorf("the time package is not imported: %v", imports)
	}
	if _, err := c.literal(&ast.Ident{Name: "Thing"}, map[string]any{"name": "n", "colour": "red"}, 0, imports); err == nil {
		t.Error("an example field the type lacks must fail the generation")
	}
	if _, err := c.literal(&ast.Ident{Name: "Union"}, map[string]any{}, 0, imports); err == nil {
		t.Error("a required union has no literal")
	}
}
