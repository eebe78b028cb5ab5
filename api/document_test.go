package api_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	yaml "github.com/oasdiff/yaml3"

	"github.com/customerapi/platform/api"
)

func loadDoc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// mergeKeys lists the line numbers of YAML merge keys (`<<:`) in a document.
func mergeKeys(src []byte) ([]int, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, err
	}
	var lines []int
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := n.Content[i]; k.Tag == "!!merge" || k.Value == "<<" {
					lines = append(lines, k.Line)
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&root)
	return lines, nil
}

// Some generators (and JSON-minded YAML parsers) drop or keep literally what a merge
// key brings in, so operations lost their error responses there: the document has none.
func TestNoMergeKeys(t *testing.T) {
	lines, err := mergeKeys(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) > 0 {
		t.Fatalf("api/openapi.yaml has YAML merge keys (<<) on lines %v: write the entries out", lines)
	}
	// The check itself finds them, block or flow style.
	for _, src := range []string{"a: &x {b: 1}\nc:\n  <<: *x\n", "a: &x {b: 1}\nc: {<<: [*x], d: 2}\n"} {
		if l, err := mergeKeys([]byte(src)); err != nil || len(l) != 1 {
			t.Fatalf("mergeKeys(%q) = %v, %v; want one", src, l, err)
		}
	}
}

// Every operation declares the errors a client handles for it: a malformed request (400),
// and on one resource (a path ending in a parameter, or below one) 404, each on its own;
// every other error any request can get (401, 403, 415, 429, 431, 500, 503) is the one
// shared `default` answer, the OtherErrors response that lists them, so that the reference
// shows two or three errors per operation and not ten. No operation spells out one of the
// shared ones again.
func TestEveryOperationDeclaresTheSharedErrors(t *testing.T) {
	doc := loadDoc(t)
	shared := map[string]bool{"401": true, "403": true, "415": true, "431": true, "500": true, "503": true}
	n := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			n++
			want := []string{"400", "default"}
			if strings.Contains(path, "{") {
				want = append(want, "404")
			}
			for _, code := range want {
				r := op.Responses.Value(code)
				if r == nil {
					t.Errorf("%s %s does not declare %s", method, path, code)
					continue
				}
				if mt := r.Value.Content.Get("application/json"); mt == nil || mt.Schema == nil || mt.Schema.Ref != "#/components/schemas/ErrorEnvelope" {
					t.Errorf("%s %s: %s is not an ErrorEnvelope", method, path, code)
				}
			}
			if r := op.Responses.Default(); r != nil && r.Ref != "#/components/responses/OtherErrors" {
				t.Errorf("%s %s: default is %q, not the shared OtherErrors response", method, path, r.Ref)
			}
			for code := range op.Responses.Map() {
				if shared[code] {
					t.Errorf("%s %s declares %s on its own: the shared default answer covers it", method, path, code)
				}
				// Every error status declared is one the envelope can carry.
				if r4xx5xx(code) && !documentedErrorStatus[code] {
					t.Errorf("%s %s declares %s, which the platform never answers", method, path, code)
				}
			}
		}
	}
	if n < 60 {
		t.Fatalf("only %d operations found", n)
	}
}

func r4xx5xx(code string) bool { return len(code) == 3 && (code[0] == '4' || code[0] == '5') }

// documentedErrorStatus lists the error statuses the platform answers (docs/api.md).
var documentedErrorStatus = map[string]bool{
	"400": true, "401": true, "403": true, "404": true, "409": true, "415": true, "416": true,
	"412": true, "429": true, "431": true, "500": true, "503": true,
}

// walkSchemas calls f on every schema reachable from s, each once, with its path.
func walkSchemas(s *openapi3.SchemaRef, at string, seen map[*openapi3.Schema]bool, f func(*openapi3.Schema, string)) {
	if s == nil || s.Value == nil || seen[s.Value] {
		return
	}
	if s.Ref != "" {
		at = s.Ref
	}
	v := s.Value
	seen[v] = true
	f(v, at)
	for name, p := range v.Properties {
		walkSchemas(p, at+"/"+name, seen, f)
	}
	walkSchemas(v.Items, at+"[]", seen, f)
	walkSchemas(v.AdditionalProperties.Schema, at+"{}", seen, f)
	walkSchemas(v.Not, at+"!", seen, f)
	for _, l := range [][]*openapi3.SchemaRef{v.AllOf, v.OneOf, v.AnyOf} {
		for _, x := range l {
			walkSchemas(x, at, seen, f)
		}
	}
}

// Forward compatibility (docs/api.md): what the platform sends (responses, webhook
// bodies) never forbids additional properties, so that a client built from today's
// document keeps working when a field is added; what it receives (request bodies) does,
// because an unknown field in a request is a 400.
func TestResponsesAreOpenRequestsClosed(t *testing.T) {
	doc := loadDoc(t)
	out, in := map[*openapi3.Schema]bool{}, map[*openapi3.Schema]bool{}
	var outbound []*openapi3.SchemaRef
	var outAt []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for code, r := range op.Responses.Map() {
				for _, mt := range r.Value.Content {
					outbound, outAt = append(outbound, mt.Schema), append(outAt, method+" "+path+" "+code)
				}
			}
			for _, cb := range op.Callbacks {
				for _, cbItem := range cb.Value.Map() {
					for _, cbOp := range cbItem.Operations() {
						for _, mt := range cbOp.RequestBody.Value.Content {
							outbound, outAt = append(outbound, mt.Schema), append(outAt, "callback of "+method+" "+path)
						}
					}
				}
			}
			if op.RequestBody == nil {
				continue
			}
			for ct, mt := range op.RequestBody.Value.Content {
				walkSchemas(mt.Schema, method+" "+path+" "+ct, in, func(s *openapi3.Schema, at string) {
					if s.Type.Is("object") && len(s.AllOf) == 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
						t.Errorf("request schema %s does not say additionalProperties: false", at)
					}
				})
			}
		}
	}
	for i, s := range outbound {
		walkSchemas(s, outAt[i], out, func(s *openapi3.Schema, at string) {
			if s.AdditionalProperties.Has != nil && !*s.AdditionalProperties.Has {
				t.Errorf("response schema %s forbids additional properties", at)
			}
			if in[s] && s.Type.Is("object") {
				t.Errorf("object schema %s is shared by requests and responses: give the request its own", at)
			}
		})
	}
}
func TestEveryOperationIsDescribed(t *testing.T) {
	doc := loadDoc(t)
	var missing []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if strings.TrimSpace(op.Description) == "" || strings.TrimSpace(op.Summary) == "" {
				missing = append(missing, method+" "+path)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("%d operations lack a summary or description:\n%s", len(missing), strings.Join(missing, "\n"))
	}
}

// The document validates under kin-openapi's strictest settings we use anywhere.
func TestDocumentValidatesWithExamples(t *testing.T) {
	doc := loadDoc(t)
	if err := doc.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatal(err)
	}
}

// Every POST takes an Idempotency-Key, may answer 409 (a retry in flight, the key reused)
// and marks a replayed success with Idempotent-Replayed (docs/api.md, "Idempotent
// retries"); no other method takes the header.
func TestEveryPOSTIsIdempotent(t *testing.T) {
	doc := loadDoc(t)
	n := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			takes := false
			for _, p := range op.Parameters {
				if p.Value.In == "header" && p.Value.Name == "Idempotency-Key" {
					takes = true
				}
			}
			if method != "POST" {
				if takes {
					t.Errorf("%s %s takes Idempotency-Key: only POSTs do", method, path)
				}
				continue
			}
			n++
			if !takes {
				t.Errorf("POST %s does not take Idempotency-Key", path)
			}
			if op.Responses.Value("409") == nil {
				t.Errorf("POST %s does not declare 409 (a retry in flight, a reused key)", path)
			}
			for code, r := range op.Responses.Map() {
				if strings.HasPrefix(code, "2") && r.Value.Headers["Idempotent-Replayed"] == nil {
					t.Errorf("POST %s: %s does not declare Idempotent-Replayed", path, code)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d POSTs found", n)
	}
}
