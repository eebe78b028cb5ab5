package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/format"
	"go/types"
	"sort"
	"strconv"
	"strings"
)

// BaseURL is the address the samples call: make run's gateway. The gateway serves them
// with its PUBLIC_BASE_URL in its place.
const BaseURL = "http://127.0.0.1:25001"

// codeSample is one entry of an operation's x-codeSamples (Redoc's shape).
type codeSample struct {
	Lang   string `json:"lang"`
	Label  string `json:"label"`
	Source string `json:"source"`
}

// samples are every operation's code samples and the files that compile them.
type samples struct {
	doc    map[string][]codeSample // by operationId
	goFile []byte                  // clients/go/examples_gen_test.go
	tsFile []byte                  // clients/typescript/test/samples/samples.gen.ts
}

// goSample is one operation's Go sample.
type goSample struct {
	name    string // the example function's name
	body    string // its statements, one tab deep
	imports map[string]bool
}

// tsSample is one operation's TypeScript sample.
type tsSample struct {
	imports []string // shown with the sample
	body    string   // the statements after the imports
}

// generateSamples writes the samples of every operation.
func generateSamples(ops []operation, c *client) (samples, error) {
	s := samples{doc: map[string][]codeSample{}}
	var gos []goSample
	ts := map[string]tsSample{}
	for _, o := range ops {
		g, err := c.goSample(o)
		if err != nil {
			return s, fmt.Errorf("%s: Go: %w", o.ID, err)
		}
		t, err := tsSampleOf(o)
		if err != nil {
			return s, fmt.Errorf("%s: TypeScript: %w", o.ID, err)
		}
		gos, ts[o.ID] = append(gos, g), t
		s.doc[o.ID] = []codeSample{
			{Lang: "Shell", Label: "curl", Source: curlSample(o)},
			{Lang: "Go", Label: "Go", Source: dedent(g.body)},
			{Lang: "TypeScript", Label: "TypeScript", Source: strings.Join(t.imports, "\n") + "\n\n" + t.body},
		}
	}
	var err error
	if s.goFile, err = goFile(gos); err != nil {
		return s, err
	}
	s.tsFile = tsFile(ops, ts)
	return s, nil
}

// goSample writes the Go sample of o with the client: the call with the examples as
// typed values, the answer printed.
func (c *client) goSample(o operation) (goSample, error) {
	g := goSample{imports: map[string]bool{`"context"`: true, `"fmt"`: true, `"log"`: true, `"os"`: true,
		`customerapi "github.com/customerapi/platform/clients/go"`: true}}
	suffix := "withresponse"
	if o.Form != nil {
		suffix = "withbodywithresponse"
	}
	low := strings.ToLower(strings.NewReplacer("_", "", "-", "", ".", "").Replace(o.ID)) + suffix
	fn, ok := c.methods[low]
	if !ok {
		return g, fmt.Errorf("client.gen.go has no method %s (run make clients)", low)
	}
	method := c.names[low]
	var lines []string
	add := func(format string, a ...any) { lines = append(lines, fmt.Sprintf(format, a...)) }
	fatal := func(cond string) { add("if %s {", cond); add("\tlog.Fatal(err)"); add("}") }
	add("ctx := context.Background()")
	add("api, err := customerapi.New(%q, os.Getenv(\"CUSTOMER_API_KEY\"))", BaseURL)
	fatal("err != nil")
	if o.Form != nil {
		g.imports[`"bytes"`], g.imports[`"mime/multipart"`] = true, true
		add("var body bytes.Buffer")
		add("form := multipart.NewWriter(&body)")
		for _, f := range o.Form {
			if f.File {
				add("data, err := os.ReadFile(%q)", f.Value)
				fatal("err != nil")
				add("part, err := form.CreateFormFile(%q, %q)", f.Name, f.Value)
				fatal("err != nil")
				fatal("_, err := part.Write(data); err != nil")
				continue
			}
			fatal(fmt.Sprintf("err := form.WriteField(%q, %q); err != nil", f.Name, f.Value))
		}
		fatal("err := form.Close(); err != nil")
	}
	args := []string{"ctx"}
	path := 0
	for _, f := range fn.Params.List[1:] {
		for range f.Names {
			arg, err := c.argument(o, f.Type, &path, g.imports)
			if err != nil {
				return g, err
			}
			if arg != "" {
				args = append(args, arg)
			}
		}
	}
	if path != len(o.PathParams) {
		return g, fmt.Errorf("%s takes %d path parameters, the document has %d", method, path, len(o.PathParams))
	}
	name := strings.TrimSuffix(method, "WithResponse")
	if o.List && o.Form == nil {
		g.name = "ExampleAPI_" + name + "All"
		add("for item, err := range api.%sAll(%s) {", name, strings.Join(args, ", "))
		add("\tif err != nil {")
		add("\t\tlog.Fatal(err)")
		add("\t}")
		add("\tfmt.Printf(\"%%+v\\n\", item)")
		add("}")
	} else {
		g.name = "ExampleClientWithResponses_" + method
		add("resp, err := api.%s(%s)", method, strings.Join(args, ", "))
		fatal("err != nil")
		answer, err := c.answerField(fn)
		if err != nil {
			return g, fmt.Errorf("%s: %w", method, err)
		}
		switch {
		case answer != "":
			add("fmt.Printf(\"%%+v\\n\", *resp.%s)", answer)
		case o.Result == "" && o.Method == "GET":
			add("fmt.Printf(\"%%d bytes\\n\", len(resp.Body))")
		default:
			add("fmt.Println(resp.StatusCode())")
		}
	}
	g.body = "\t" + strings.Join(lines, "\n\t")
	return g, nil
}

// argument writes the value of one parameter of a client method (after ctx): a path
// parameter (counted in path), the query parameters, the body, or nothing for the
// request editors.
func (c *client) argument(o operation, t ast.Expr, path *int, imports map[string]bool) (string, error) {
	typ := types.ExprString(t)
	switch {
	case typ == "...RequestEditorFn":
		return "", nil
	case typ == "io.Reader":
		return "&body", nil
	case typ == "string" && o.Form != nil && *path == len(o.PathParams):
		return "form.FormDataContentType()", nil
	case strings.HasSuffix(typ, "Params"):
		if len(o.Query) == 0 {
			return "nil", nil
		}
		q := map[string]any{}
		for _, p := range o.Query {
			q[p.Name] = p.Example
		}
		star, ok := t.(*ast.StarExpr)
		if !ok {
			return "", fmt.Errorf("the parameters %s are not a pointer", typ)
		}
		v, err := c.paramsLiteral(star.X, q, imports)
		return "&" + v, err
	case strings.HasSuffix(typ, "RequestBody"):
		if o.JSON == nil {
			return "", fmt.Errorf("%s takes a body and the document has no example of it", typ)
		}
		return c.literal(t, o.JSON, 1, imports)
	}
	if *path >= len(o.PathParams) {
		return "", fmt.Errorf("unexpected parameter of type %s", typ)
	}
	v, err := c.literal(t, o.PathParams[*path].Example, 1, imports)
	*path++
	return v, err
}

// paramsLiteral writes the query parameters q as the generated <Operation>Params struct,
// whose fields carry the parameters' names in their form tags.
func (c *client) paramsLiteral(t ast.Expr, q map[string]any, imports map[string]bool) (string, error) {
	s, ok := c.structOf(t)
	if !ok {
		return "", fmt.Errorf("%s is not a struct", types.ExprString(t))
	}
	var elems []string
	for _, tf := range tagged(s, "form") {
		f, name := tf.field, tf.name
		v, ok := q[name]
		if !ok {
			continue
		}
		e, err := c.literal(f.Type, v, 2, imports)
		if err != nil {
			return "", fmt.Errorf("query parameter %s: %w", name, err)
		}
		elems = append(elems, f.Names[0].Name+": "+e)
		delete(q, name)
	}
	if len(q) > 0 {
		return "", fmt.Errorf("query parameters %v are no field of %s", q, types.ExprString(t))
	}
	return pkg + "." + types.ExprString(t) + block(elems, 1), nil
}

// answerField is the JSON2xx field of the method's response type ("" when the success
// has no JSON body).
func (c *client) answerField(fn *ast.FuncType) (string, error) {
	if fn.Results == nil || len(fn.Results.List) != 2 {
		return "", fmt.Errorf("does not return (response, error)")
	}
	res, ok := c.structOf(fn.Results.List[0].Type)
	if !ok {
		return "", fmt.Errorf("the response is not a struct")
	}
	var names []string
	for _, f := range res.Fields.List {
		for _, n := range f.Names {
			if strings.HasPrefix(n.Name, "JSON2") {
				names = append(names, n.Name)
			}
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "", nil
	}
	return names[0], nil
}

// goFile is the Go samples as examples of the client package: go vet checks their names
// and go test compiles them (they have no Output, so none runs).
func goFile(gos []goSample) ([]byte, error) {
	imports := map[string]bool{}
	for _, g := range gos {
		for i := range g.imports {
			imports[i] = true
		}
	}
	var b bytes.Buffer
	b.WriteString("// Code generated by clients/go/internal/clientgen from api/openapi.yaml. DO NOT EDIT.\n\n")
	b.WriteString("// The code samples of the reference (x-codeSamples at /docs), one example per\n")
	b.WriteString("// operation, so that every sample compiles against the client.\n\n")
	b.WriteString("package customerapi_test\n\nimport (\n")
	for _, i := range sortedSet(imports) {
		b.WriteString("\t" + i + "\n")
	}
	b.WriteString(")\n")
	for _, g := range gos {
		fmt.Fprintf(&b, "\nfunc %s() {\n%s\n}\n", g.name, g.body)
	}
	code, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("gofmt the Go samples: %w\n%s", err, b.Bytes())
	}
	return code, nil
}

// tsSampleOf writes the TypeScript sample of o: the client's typed call, or fetch for a
// multipart upload or an answer that is not JSON.
func tsSampleOf(o operation) (tsSample, error) {
	key := `process.env.CUSTOMER_API_KEY ?? ""`
	url := strconv.Quote(o.url(BaseURL))
	if o.Form != nil {
		t := tsSample{imports: []string{`import { readFile } from "node:fs/promises";`}}
		lines := []string{"const form = new FormData();"}
		for _, f := range o.Form {
			if f.File {
				lines = append(lines, fmt.Sprintf("form.append(%q, new Blob([await readFile(%q)]), %q);", f.Name, f.Value, f.Value))
				continue
			}
			lines = append(lines, fmt.Sprintf("form.append(%q, %q);", f.Name, f.Value))
		}
		lines = append(lines, fmt.Sprintf("const res = await fetch(%s, {", url),
			fmt.Sprintf("  method: %q,", o.Method),
			fmt.Sprintf("  headers: { \"x-api-key\": %s },", key),
			"  body: form,", "});", "console.log(res.status, await res.json());")
		t.body = strings.Join(lines, "\n")
		return t, nil
	}
	if o.Result == "" && (o.Method == "GET" || o.Method == "HEAD") { // a file, or only headers
		init := []string{}
		if o.Method == "HEAD" {
			init = append(init, `method: "HEAD"`)
		}
		if o.Secured {
			init = append(init, fmt.Sprintf("headers: { \"x-api-key\": %s }", key))
		}
		call := url
		if len(init) > 0 {
			call += ", { " + strings.Join(init, ", ") + " }"
		}
		show := "res.status, (await res.arrayBuffer()).byteLength"
		if o.Method == "HEAD" {
			show = `res.status, res.headers.get("content-length")`
		}
		return tsSample{body: fmt.Sprintf("const res = await fetch(%s);\nconsole.log(%s);", call, show)}, nil
	}
	t := tsSample{imports: []string{`import { CustomerAPI } from "@customerapi/client";`}}
	var init []string
	if len(o.PathParams) > 0 {
		init = append(init, "path: "+tsObject(o.PathParams))
	}
	if len(o.Query) > 0 {
		init = append(init, "query: "+tsObject(o.Query))
	}
	if o.JSON != nil {
		b, err := json.MarshalIndent(o.JSON, "  ", "  ")
		if err != nil {
			return t, err
		}
		init = append(init, "body: "+string(b))
	}
	call := fmt.Sprintf("api.%s(%q", strings.ToLower(o.Method), o.Path)
	if len(init) > 0 {
		call += ", {\n  " + strings.Join(init, ",\n  ") + ",\n}"
	}
	call += ")"
	lines := []string{fmt.Sprintf("const api = new CustomerAPI({ baseUrl: %q, apiKey: %s });", BaseURL, key)}
	if o.Result == "" {
		lines = append(lines, "await "+call+";")
	} else {
		v := strings.ToLower(o.Result[:1]) + o.Result[1:]
		lines = append(lines, fmt.Sprintf("const %s = await %s;", v, call), fmt.Sprintf("console.log(%s);", v))
	}
	t.body = strings.Join(lines, "\n")
	return t, nil
}

// tsObject writes parameters as an object literal.
func tsObject(ps []param) string {
	var elems []string
	for _, p := range ps {
		v, _ := json.Marshal(p.Example)
		elems = append(elems, p.Name+": "+string(v))
	}
	return "{ " + strings.Join(elems, ", ") + " }"
}

// tsFile is the TypeScript samples, each in an exported function, for tsc --strict to
// compile against the client's source.
func tsFile(ops []operation, ts map[string]tsSample) []byte {
	var b bytes.Buffer
	b.WriteString("// Code generated by clients/go/internal/clientgen from api/openapi.yaml. DO NOT EDIT.\n")
	b.WriteString("// The code samples of the reference (x-codeSamples at /docs), one function per\n")
	b.WriteString("// operation, so that tsc --strict checks every sample against the client's types.\n\n")
	b.WriteString("import { readFile } from \"node:fs/promises\";\n\n")
	b.WriteString("import { CustomerAPI } from \"../../src/index.js\";\n\n")
	b.WriteString("void readFile;\nvoid CustomerAPI;\n")
	for _, o := range ops {
		t := ts[o.ID]
		fmt.Fprintf(&b, "\nexport async function %s(): Promise<void> {\n", o.ID)
		for _, l := range strings.Split(t.body, "\n") {
			if l == "" {
				b.WriteString("\n")
				continue
			}
			b.WriteString("  " + l + "\n")
		}
		b.WriteString("}\n")
	}
	return b.Bytes()
}

// curlSample writes o as a curl command.
func curlSample(o operation) string {
	lines := []string{"curl -sS"}
	if o.Method == "HEAD" {
		lines[0] += " -I"
	} else if o.Method != "GET" {
		lines[0] += " -X " + o.Method
	}
	lines[0] += " " + shellQuote(o.url(BaseURL))
	if o.Secured {
		lines = append(lines, `-H "x-api-key: $CUSTOMER_API_KEY"`)
	}
	for _, f := range o.Form {
		if f.File {
			lines = append(lines, "-F "+shellQuote(f.Name+"=@"+f.Value))
			continue
		}
		lines = append(lines, "-F "+shellQuote(f.Name+"="+f.Value))
	}
	if o.JSON != nil {
		b, _ := json.Marshal(o.JSON)
		if len(b) > 60 {
			b, _ = json.MarshalIndent(o.JSON, "  ", "  ")
		}
		lines = append(lines, "-H 'content-type: application/json'", "-d "+shellQuote(string(b)))
	}
	if o.Result == "" && o.Method == "GET" {
		lines = append(lines, "-o download.bin")
	}
	return strings.Join(lines, " \\\n  ")
}

// shellQuote quotes s for a POSIX shell (single quotes).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// dedent removes the one tab every line of a Go sample's body starts with.
func dedent(body string) string {
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "\t")
	}
	return strings.Join(lines, "\n")
}

// sortedSet is a set's members in order.
func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
