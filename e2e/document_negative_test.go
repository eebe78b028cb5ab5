package e2e

// The document-driven negative test: from each operation's example request, invalid
// requests are derived (each required property removed at every depth, each property
// given a wrong type, a value out of its enum, a string over its maxLength, an empty or
// white-space body, query parameters out of their bounds) and sent through the gateway;
// each must be a 400 in the envelope whose details name the offending place. A rule the
// document states that the platform does not enforce fails here.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	apidoc "github.com/customerapi/platform/api"
	"github.com/customerapi/platform/api/apitest"
)

// badRequest is one invalid request derived from the document.
type badRequest struct {
	name        string
	method      string
	path        string // with the query string
	body        *string
	field       string // body, query or path
	place       []any  // where the issue must be reported
	contentType string
}

func TestEveryOperationRefusesWhatTheDocumentForbids(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(apidoc.Spec)
	if err != nil {
		t.Fatal(err)
	}
	c := api(t, newKey(t, map[string]any{"rateLimit": map[string]any{"limit": 100000, "windowMs": 1000}}))
	c.Contract = sys.contract
	var cases []badRequest
	operations := 0
	for _, path := range sortedPaths(doc) {
		item := doc.Paths.Value(path)
		for _, method := range sortedMethods(item) {
			op := item.GetOperation(method)
			if op.Security != nil && len(*op.Security) == 0 {
				continue // public operations (the document itself, signed downloads) take no input to judge
			}
			operations++
			cases = append(cases, derive(t, method, path, item, op)...)
		}
	}
	if operations < 60 || len(cases) < 200 {
		t.Fatalf("derived %d cases from %d operations: the document lost its examples", len(cases), operations)
	}
	failed := 0
	for _, bc := range cases {
		cl := c
		if bc.contentType != "" {
			cl = c.With("Content-Type", bc.contentType)
		}
		var body any
		if bc.body != nil {
			body = apitest.Raw(*bc.body)
		}
		r, err := cl.Try(bc.method, bc.path, body)
		if err != nil {
			t.Errorf("%s: %v", bc.name, err)
			failed++
		} else if !reports(r, bc.field, bc.place) {
			t.Errorf("%s: want 400 naming %s %v, got %s", bc.name, bc.field, bc.place, clip(r.String(), 400))
			failed++
		}
		if failed >= 25 {
			t.Fatalf("stopping after %d failures of %d cases", failed, len(cases))
		}
	}
	t.Logf("%d invalid requests derived from %d operations were all refused with the right place", len(cases), operations)
}

// The findings the document-driven test was written to catch, each by name.
func TestNamedFindingsOfTheDocumentTest(t *testing.T) {
	c := api(t, newKey(t, nil))
	c.Contract = sys.contract
	for _, bc := range []badRequest{
		{name: "changes[1].newValue missing in POST .../messages", method: "POST",
			path: "/v0/pages/page_x/audiences/audience_x/messages", field: "body", place: []any{"changes", 1, "newValue"},
			body: new(`{"content":"Shorter title please","changes":[{"field":"currentMetaTitle","newValue":"A"},{"field":"currentMetaDescription"}]}`)},
		{name: "footerLinks[1].links missing in POST /v0/pages", method: "POST", path: "/v0/pages",
			field: "body", place: []any{"footerLinks", 1, "links"},
			body: new(`{"name":"n","title":"t","pageType":"inbound","footerLinks":[{"title":"A","links":[]},{"title":"B"}]}`)},
		{name: "no body on PATCH of a page", method: "PATCH", path: "/v0/pages/page_x", field: "body", place: []any{}, body: new("")},
		{name: "white space as the body of PATCH of an audience", method: "PATCH", path: "/v0/pages/page_x/audiences/audience_x",
			field: "body", place: []any{}, body: new(" \n\t ")},
		{name: "no body on PATCH of a subscription", method: "PATCH", path: "/v0/webhook_subscriptions/whsub_x",
			field: "body", place: []any{}, body: new("")},
		{name: "includeEmptyOnly=FALSE (the enum is lower case)", method: "GET", path: "/v0/accounts?includeEmptyOnly=FALSE",
			field: "query", place: []any{"includeEmptyOnly"}},
	} {
		t.Run(bc.name, func(t *testing.T) {
			var body any
			if bc.body != nil {
				body = apitest.Raw(*bc.body)
			}
			r, err := c.Try(bc.method, bc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if !reports(r, bc.field, bc.place) {
				t.Fatalf("want 400 naming %s %v, got %s", bc.field, bc.place, clip(r.String(), 400))
			}
		})
	}
	// 431 is answered on every operation, so every operation declares it: in the shared
	// default answer, the OtherErrors response, which lists it.
	doc, _ := openapi3.NewLoader().LoadFromData(apidoc.Spec)
	for _, path := range sortedPaths(doc) {
		for method, op := range doc.Paths.Value(path).Operations() {
			if d := op.Responses.Default(); d == nil || d.Value.Description == nil || !strings.Contains(*d.Value.Description, "431") {
				t.Errorf("%s %s does not declare 431 (its default answer), which the server answers to an oversized head", method, path)
			}
		}
	}
	status, err := oversizedHead(sys.base, "/v0/topics?q="+strings.Repeat("x", 8<<10))
	if err != nil {
		t.Fatal(err)
	}
	if status != 431 {
		t.Fatalf("an 8 KiB request line: status %d, want 431", status)
	}
}

// oversizedHead sends a GET of path in one write and reads the status line. The server
// answers 431 before it has read the whole head and then closes, so the close can reach
// the client as a reset before it reads the answer (Go's client writes in 4 KiB pieces,
// and a later piece fails): a reset is tried again, up to five times.
func oversizedHead(base, path string) (int, error) {
	var last error
	for range 5 {
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			return 0, err
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = conn.Write([]byte("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"))
		if err == nil {
			var resp *http.Response
			if resp, err = http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
				resp.Body.Close()
				conn.Close()
				return resp.StatusCode, nil
			}
		}
		conn.Close()
		if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
			return 0, err
		}
		last = err
	}
	return 0, fmt.Errorf("five resets without an answer: %w", last)
}

// reports tells whether r is a 400 whose details hold an issue of field at place.
func reports(r *apitest.Response, field string, place []any) bool {
	if r.Status != 400 {
		return false
	}
	var env struct {
		Details []struct {
			Field  string `json:"field"`
			Issues []struct {
				Path []any `json:"path"`
			} `json:"issues"`
		} `json:"details"`
	}
	if json.Unmarshal(r.Body, &env) != nil {
		return false
	}
	want := fmt.Sprint(place)
	for _, d := range env.Details {
		for _, is := range d.Issues {
			if d.Field == field && fmt.Sprint(normalise(is.Path)) == want {
				return true
			}
		}
	}
	return false
}

// normalise turns JSON numbers of a path into ints, as the wanted places hold them.
func normalise(p []any) []any {
	out := make([]any, len(p))
	for i, v := range p {
		if f, ok := v.(float64); ok {
			out[i] = int(f)
			continue
		}
		out[i] = v
	}
	return out
}

// derive lists the invalid requests of one operation.
func derive(t *testing.T, method, path string, item *openapi3.PathItem, op *openapi3.Operation) []badRequest {
	t.Helper()
	target := fillPath(path)
	label := method + " " + path
	var out []badRequest
	params := append(openapi3.Parameters{}, item.Parameters...)
	params = append(params, op.Parameters...)
	for _, pr := range params {
		p := pr.Value
		if p.In != openapi3.ParameterInQuery || p.Schema == nil || p.Schema.Value == nil {
			continue
		}
		for _, bad := range badQueryValues(p.Schema.Value) {
			out = append(out, badRequest{name: fmt.Sprintf("%s ?%s=%s", label, p.Name, bad), method: method,
				path: target + "?" + p.Name + "=" + bad, field: "query", place: []any{p.Name}})
		}
	}
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return out
	}
	rb := op.RequestBody.Value
	mt := rb.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return out // multipart uploads are judged by their own tests
	}
	if rb.Required {
		out = append(out,
			badRequest{name: label + " without a body", method: method, path: target, body: new(""), field: "body", place: []any{},
				contentType: "application/json"},
			badRequest{name: label + " with a body of white space", method: method, path: target, body: new("  \n "), field: "body", place: []any{}})
	}
	example := exampleOf(mt)
	if example == nil {
		t.Errorf("%s: the request body has no example to derive invalid requests from", label)
		return out
	}
	walkBody(mt.Schema.Value, example, nil, func(name string, place []any, mutated func(root any) any) {
		b, _ := json.Marshal(mutated(deepCopy(example)))
		out = append(out, badRequest{name: label + " " + name, method: method, path: target, body: new(string(b)),
			field: "body", place: place})
	})
	return out
}

// walkBody calls emit for every invalid variant of value under schema at place: each
// required property removed, each typed property of a wrong type, out of its enum, or
// over its maxLength; then it goes deeper.
func walkBody(schema *openapi3.Schema, value any, place []any, emit func(name string, place []any, mutated func(root any) any)) {
	schema = flatten(schema)
	switch v := value.(type) {
	case map[string]any:
		for _, req := range schema.Required {
			if _, ok := v[req]; !ok {
				continue
			}
			at := appendPlace(place, req)
			emit("without "+pathText(at), at, func(root any) any {
				delete(get(root, place).(map[string]any), req)
				return root
			})
		}
		for _, name := range sortedKeys(v) {
			ps := schema.Properties[name]
			if ps == nil || ps.Value == nil {
				continue
			}
			prop := flatten(ps.Value)
			at := appendPlace(place, name)
			if wrong, ok := wrongType(prop); ok {
				emit(pathText(at)+" of a wrong type", at, setter(place, name, wrong))
			}
			if len(prop.Enum) > 0 && prop.Type.Is("string") {
				emit(pathText(at)+" out of its enum", at, setter(place, name, "not-in-the-enum"))
			}
			if prop.MaxLength != nil && *prop.MaxLength < 200_000 && prop.Type.Is("string") && prop.Pattern == "" && prop.Format == "" {
				emit(pathText(at)+" over its maxLength", at, setter(place, name, strings.Repeat("x", int(*prop.MaxLength)+1)))
			}
			walkBody(prop, v[name], at, emit)
		}
	case []any:
		if schema.Items != nil && schema.Items.Value != nil && len(v) > 0 {
			walkBody(schema.Items.Value, v[0], appendPlace(place, 0), emit)
		}
	}
}

// flatten returns the one schema allOf wraps (the platform's nullable objects).
func flatten(s *openapi3.Schema) *openapi3.Schema {
	if len(s.AllOf) == 1 && s.AllOf[0].Value != nil && len(s.Properties) == 0 {
		return s.AllOf[0].Value
	}
	return s
}

// wrongType is a value of another JSON type than the schema's one type.
func wrongType(s *openapi3.Schema) (any, bool) {
	if s.Type == nil || len(*s.Type) != 1 || len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		return nil, false
	}
	switch (*s.Type)[0] {
	case "string":
		return 12345, true
	case "integer", "number", "boolean", "array", "object":
		return "a string", true
	}
	return nil, false
}

// badQueryValues are values a query parameter's schema forbids.
func badQueryValues(s *openapi3.Schema) []string {
	var out []string
	switch {
	case s.Type.Is("integer"):
		out = append(out, "ten")
		if s.Max != nil {
			out = append(out, fmt.Sprint(int64(*s.Max)+1))
		}
		if s.Min != nil {
			out = append(out, fmt.Sprint(int64(*s.Min)-1))
		}
	case s.Type.Is("string") && len(s.Enum) > 0:
		out = append(out, "not-in-the-enum")
	case s.Type.Is("string") && s.MaxLength != nil && *s.MaxLength < 2000:
		out = append(out, strings.Repeat("x", int(*s.MaxLength)+1))
	case s.Type.Is("boolean"):
		out = append(out, "maybe")
	}
	return out
}

func setter(parent []any, name string, v any) func(root any) any {
	return func(root any) any {
		get(root, parent).(map[string]any)[name] = v
		return root
	}
}

// get walks root along place.
func get(root any, place []any) any {
	cur := root
	for _, p := range place {
		switch k := p.(type) {
		case string:
			cur = cur.(map[string]any)[k]
		case int:
			cur = cur.([]any)[k]
		}
	}
	return cur
}

func appendPlace(place []any, p any) []any {
	return append(append([]any{}, place...), p)
}

func pathText(place []any) string {
	parts := make([]string, len(place))
	for i, p := range place {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ".")
}

func deepCopy(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// exampleOf is the example request of a JSON body: the media type's own, else its
// schema's.
func exampleOf(mt *openapi3.MediaType) any {
	if mt.Example != nil {
		return deepCopy(mt.Example)
	}
	for _, ex := range mt.Examples {
		if ex.Value != nil && ex.Value.Value != nil {
			return deepCopy(ex.Value.Value)
		}
	}
	if s := mt.Schema.Value; s.Example != nil {
		return deepCopy(s.Example)
	}
	if s := flatten(mt.Schema.Value); s.Example != nil {
		return deepCopy(s.Example)
	}
	return nil
}

// fillPath puts a syntactically valid ID into every path parameter: the document is
// judged before any resource is looked up.
func fillPath(path string) string {
	var b strings.Builder
	for _, seg := range strings.Split(path, "/") {
		if strings.HasPrefix(seg, "{") {
			name := strings.TrimSuffix(strings.TrimPrefix(seg, "{"), "}")
			seg = strings.TrimSuffix(name, "_id") + "_x"
		}
		if b.Len() > 0 || seg != "" {
			b.WriteString("/")
		}
		b.WriteString(seg)
	}
	return b.String()
}

func sortedPaths(doc *openapi3.T) []string {
	var out []string
	for p := range doc.Paths.Map() {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func sortedMethods(item *openapi3.PathItem) []string {
	var out []string
	for m := range item.Operations() {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
