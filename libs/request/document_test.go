package request

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/customerapi/platform/libs/apierror"
)

// testSpec is a small document with the shapes the platform's operations use.
const testSpec = `
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /v0/things:
    get:
      parameters:
        - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 100, default: 20}}
        - {name: includeEmptyOnly, in: query, schema: {type: string, enum: ["true", "false", "1", "0"]}}
      responses: {"200": {description: ok}}
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/ThingIn"}
      responses: {"201": {description: ok}}
  /v0/things/trash:
    get:
      responses: {"200": {description: ok}}
  /v0/things/{thing_id}/archive:
    post:
      parameters:
        - {name: thing_id, in: path, required: true, schema: {type: string}}
      requestBody:
        required: false
        content:
          application/json:
            schema: {type: object, additionalProperties: false}
      responses: {"200": {description: ok}}
  /v0/things/{thing_id}:
    get:
      parameters:
        - {name: thing_id, in: path, required: true, schema: {type: string, pattern: "^thing_[a-z0-9]{26}$"}}
      responses: {"200": {description: ok}}
    patch:
      parameters:
        - {name: thing_id, in: path, required: true, schema: {type: string}}
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              minProperties: 1
              properties:
                title: {type: string, maxLength: 5}
                meta:
                  type: object
                  nullable: true
                  allOf: [{$ref: "#/components/schemas/Meta"}]
      responses: {"200": {description: ok}}
components:
  schemas:
    Meta:
      type: object
      additionalProperties: false
      properties:
        title: {type: string, maxLength: 5}
    ThingIn:
      type: object
      additionalProperties: false
      required: [title, changes]
      properties:
        title: {type: string, minLength: 1, maxLength: 5}
        kind: {type: string, enum: [a, b]}
        count: {type: integer, minimum: 0}
        meta:
          type: object
          nullable: true
          allOf: [{$ref: "#/components/schemas/Meta"}]
        changes:
          type: array
          items:
            type: object
            additionalProperties: false
            required: [field, newValue]
            properties:
              field: {type: string}
              newValue: {type: string}
`

func testApp(t *testing.T) *fiber.App {
	t.Helper()
	d, err := LoadDocument(t.Context(), []byte(testSpec))
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New(fiber.Config{ErrorHandler: apierror.Renderer{BaseURL: "http://x"}.Handler()})
	app.Use(d.Middleware())
	ok := func(c *fiber.Ctx) error { return c.SendStatus(200) }
	app.Get("/v0/things", ok)
	app.Post("/v0/things", ok)
	app.Get("/v0/things/trash", ok)
	app.Get("/v0/things/:thing_id", ok)
	app.Patch("/v0/things/:thing_id", ok)
	app.Post("/v0/things/:thing_id/archive", ok)
	return app
}

// Requests are judged by the document: each broken rule is a 400 whose details name the
// request part and the place of the problem, and a valid request reaches its handler.
func TestRequestsAreJudgedByTheDocument(t *testing.T) {
	app := testApp(t)
	valid := `{"title":"abc","changes":[{"field":"x","newValue":"y"}]}`
	for _, tc := range []struct {
		name, method, target, body string
		want                       int
		field, code                string
		path                       []any
	}{
		{"valid create", "POST", "/v0/things", valid, 200, "", "", nil},
		{"missing required nested field", "POST", "/v0/things", `{"title":"abc","changes":[{"field":"x","newValue":"y"},{"field":"x"}]}`, 400, "body", "invalid_type", []any{"changes", 1, "newValue"}},
		{"missing required field", "POST", "/v0/things", `{"changes":[]}`, 400, "body", "invalid_type", []any{"title"}},
		{"wrong type", "POST", "/v0/things", `{"title":5,"changes":[]}`, 400, "body", "invalid_type", []any{"title"}},
		{"out of enum", "POST", "/v0/things", `{"title":"a","kind":"c","changes":[]}`, 400, "body", "invalid_enum_value", []any{"kind"}},
		{"over maxLength", "POST", "/v0/things", `{"title":"abcdef","changes":[]}`, 400, "body", "too_big", []any{"title"}},
		{"under minimum", "POST", "/v0/things", `{"title":"a","count":-1,"changes":[]}`, 400, "body", "too_small", []any{"count"}},
		{"not an integer", "POST", "/v0/things", `{"title":"a","count":1.5,"changes":[]}`, 400, "body", "invalid_type", []any{"count"}},
		{"a nullable object may be null", "POST", "/v0/things", `{"title":"a","meta":null,"changes":[]}`, 200, "", "", nil},
		{"inside a nullable object (allOf)", "POST", "/v0/things", `{"title":"a","meta":{"title":"abcdef"},"changes":[]}`, 400, "body", "too_big", []any{"meta", "title"}},
		{"unknown field", "POST", "/v0/things", `{"title":"a","changes":[],"extra":1}`, 400, "body", "unrecognized_keys", []any{"extra"}},
		{"unknown nested field", "POST", "/v0/things", `{"title":"a","changes":[{"field":"x","newValue":"y","z":1}]}`, 400, "body", "unrecognized_keys", []any{"changes", 0, "z"}},
		{"no body where one is required", "POST", "/v0/things", ``, 400, "body", "invalid_type", []any{}},
		{"a body of only whitespace", "POST", "/v0/things", "  \n\t ", 400, "body", "invalid_json", []any{}},
		{"an empty PATCH object", "PATCH", "/v0/things/thing_1", `{}`, 400, "body", "too_small", []any{}},
		{"no PATCH body", "PATCH", "/v0/things/thing_1", ``, 400, "body", "invalid_type", []any{}},
		{"a nullable object set to null", "PATCH", "/v0/things/thing_1", `{"meta":null}`, 200, "", "", nil},
		{"a nullable object of the wrong type", "PATCH", "/v0/things/thing_1", `{"meta":"x"}`, 400, "body", "invalid_type", []any{"meta"}},
		{"an unknown field in a nullable object", "PATCH", "/v0/things/thing_1", `{"meta":{"colour":"red"}}`, 400, "body", "unrecognized_keys", []any{"meta", "colour"}},
		{"a bound in a nullable object", "PATCH", "/v0/things/thing_1", `{"meta":{"title":"toolong"}}`, 400, "body", "too_big", []any{"meta", "title"}},
		{"malformed JSON", "POST", "/v0/things", `{"title":`, 400, "body", "invalid_json", []any{}},
		{"no body where it is optional", "POST", "/v0/things/thing_1/archive", ``, 200, "", "", nil},
		{"an empty object where the body is optional", "POST", "/v0/things/thing_1/archive", `{}`, 200, "", "", nil},
		{"only whitespace where the body is optional", "POST", "/v0/things/thing_1/archive", " \r\n", 400, "body", "invalid_json", []any{}},
		{"a field where the body is optional and empty", "POST", "/v0/things/thing_1/archive", `{"force":true}`, 400, "body", "unrecognized_keys", []any{"force"}},
		{"NUL in a string", "POST", "/v0/things", `{"title":"a\u0000","changes":[]}`, 400, "body", "invalid_string", []any{"title"}},
		{"query out of enum (case matters)", "GET", "/v0/things?includeEmptyOnly=FALSE", ``, 400, "query", "invalid_enum_value", []any{"includeEmptyOnly"}},
		{"query in enum", "GET", "/v0/things?includeEmptyOnly=false", ``, 200, "", "", nil},
		{"query over maximum", "GET", "/v0/things?limit=101", ``, 400, "query", "too_big", []any{"limit"}},
		{"query not a number", "GET", "/v0/things?limit=ten", ``, 400, "query", "invalid_type", []any{"limit"}},
		// A parameter with a default is still not allowed an empty value: the default
		// stands in for an absent parameter, not for `limit=`.
		{"empty query value with a default", "GET", "/v0/things?limit=", ``, 400, "query", "too_small", []any{"limit"}},
		{"absent query value with a default", "GET", "/v0/things", ``, 200, "", "", nil},
		{"path parameter breaks its pattern", "GET", "/v0/things/nope", ``, 400, "path", "invalid_string", []any{"thing_id"}},
		{"path parameter escaped", "GET", "/v0/things/thing_0123456789abcdefghjkmnpqrs", ``, 200, "", "", nil},
		{"a literal path beats a parameter", "GET", "/v0/things/trash", ``, 200, "", "", nil},
		{"a path the document lacks passes on", "GET", "/v0/other", ``, 404, "", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := app.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("%s %s: status %d, want %d: %s", tc.method, tc.target, resp.StatusCode, tc.want, b)
			}
			if tc.want != 400 {
				return
			}
			var env struct {
				Details []apierror.FieldIssues `json:"details"`
			}
			if err := json.Unmarshal(b, &env); err != nil || len(env.Details) == 0 {
				t.Fatalf("a 400 must list its issues: %s", b)
			}
			for _, d := range env.Details {
				for _, is := range d.Issues {
					if d.Field == tc.field && is.Code == tc.code && samePath(is.Path, tc.path) {
						return
					}
				}
			}
			t.Fatalf("want issue %s %s at %v, got %s", tc.field, tc.code, tc.path, b)
		})
	}
}

// samePath compares an issue path decoded from JSON (numbers as float64) with a wanted one.
func samePath(got, want []any) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		switch w := want[i].(type) {
		case int:
			if f, ok := got[i].(float64); !ok || int(f) != w {
				return false
			}
		default:
			if got[i] != w {
				return false
			}
		}
	}
	return true
}

// BenchmarkDocumentValidation measures the cost per request of judging a create by the
// platform's document (route lookup, body parse, schema walk).
func BenchmarkDocumentValidation(b *testing.B) {
	d, err := LoadDocument(b.Context(), []byte(testSpec))
	if err != nil {
		b.Fatal(err)
	}
	app := fiber.New()
	app.Use(d.Middleware())
	app.Post("/v0/things", func(c *fiber.Ctx) error { return c.SendStatus(201) })
	h := app.Handler()
	body := []byte(`{"title":"abc","kind":"a","count":3,"changes":[{"field":"x","newValue":"y"}]}`)
	var ctx fasthttpCtx
	for b.Loop() {
		ctx.reset(body)
		h(&ctx.RequestCtx)
		if ctx.Response.StatusCode() != 201 {
			b.Fatalf("status %d", ctx.Response.StatusCode())
		}
	}
}

// fasthttpCtx is a reusable request context for the benchmark.
type fasthttpCtx struct{ fasthttp.RequestCtx }

func (c *fasthttpCtx) reset(body []byte) {
	c.Request.Reset()
	c.Response.Reset()
	c.Request.Header.SetMethod("POST")
	c.Request.SetRequestURI("/v0/things")
	c.Request.Header.SetContentType("application/json")
	c.Request.SetBody(body)
}

// bodySpec has an operation whose JSON body is optional, as the action endpoints' are.
const bodySpec = `
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /v0/things/{thing_id}/archive:
    post:
      parameters:
        - {name: thing_id, in: path, required: true, schema: {type: string}}
      requestBody:
        content:
          application/json:
            schema: {type: object, additionalProperties: false}
      responses: {"200": {description: ok}}
`

// bodyApp serves bodySpec; stream makes the server hand request bodies over unread, as
// the assets service's does (its uploads stream).
func bodyApp(t *testing.T, stream bool) *fiber.App {
	t.Helper()
	d, err := LoadDocument(t.Context(), []byte(bodySpec))
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New(fiber.Config{ErrorHandler: apierror.Renderer{BaseURL: "http://x"}.Handler(),
		StreamRequestBody: stream, BodyLimit: 4 * apierror.MaxBodyBytes, DisableStartupMessage: true})
	app.Use(d.Middleware())
	app.Post("/v0/things/:thing_id/archive", func(c *fiber.Ctx) error {
		var in struct{}
		if err := Decode(c, &in); err != nil {
			return err
		}
		return c.SendString(string(c.Body()))
	})
	return app
}

// An optional body may be left out, or be an empty object; white space alone is sent but
// is not JSON, so it is malformed there as where a body is required. A server that
// streams request bodies gets them judged the same, read no further than the JSON limit,
// and the handler still reads the body the document judged.
func TestOptionalAndStreamedBodies(t *testing.T) {
	big := `{"a":"` + strings.Repeat("x", apierror.MaxBodyBytes) + `"}`
	for _, stream := range []bool{false, true} {
		app := bodyApp(t, stream)
		base := serve(t, app)
		for _, tc := range []struct {
			name, body string
			chunked    bool // no Content-Length
			want       int
			code       string
		}{
			{"no body", "", false, 200, ""},
			{"an empty object", "{}", false, 200, ""},
			{"white space alone", " \r\n\t", false, 400, "invalid_json"},
			{"a field", `{"a":1}`, false, 400, "unrecognized_keys"},
			{"over the limit", big, false, 400, "too_big"},
			{"a field, no length given", `{"a":1}`, true, 400, "unrecognized_keys"},
			{"an empty object, no length given", "{}", true, 200, ""},
			{"over the limit, no length given", big, true, 400, "too_big"},
		} {
			var resp *http.Response
			if tc.chunked { // sent in chunks, over a connection (app.Test sends a length)
				resp = postChunked(t, base+"/v0/things/t1/archive", tc.body)
			} else {
				req := httptest.NewRequest("POST", "/v0/things/t1/archive", strings.NewReader(tc.body))
				if tc.body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				var err error
				if resp, err = app.Test(req, -1); err != nil {
					t.Fatal(err)
				}
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want || tc.code != "" && !strings.Contains(string(b), `"code":"`+tc.code+`"`) {
				t.Errorf("stream %v, %s: %d %s, want %d %s", stream, tc.name, resp.StatusCode, b, tc.want, tc.code)
			}
			if tc.want == 200 && string(b) != tc.body {
				t.Errorf("stream %v, %s: the handler read %q", stream, tc.name, b)
			}
		}
		if !stream {
			continue
		}
		// A streamed body far over the limit is refused having read about the limit, not
		// held whole: the client gets to send a few MiB (socket buffers), not 64.
		huge := &countingReader{r: io.MultiReader(strings.NewReader(`{"a":"`), io.LimitReader(zeros{}, 64<<20))}
		resp, err := http.Post(base+"/v0/things/t1/archive", "application/json", huge)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 || !strings.Contains(string(b), `"too_big"`) {
				t.Errorf("a huge streamed body: %d %s", resp.StatusCode, b)
			}
		} // else the server closed the connection on the rest of the body, as it should
		if sent := huge.n.Load(); sent > 16<<20 {
			t.Errorf("the server read %d MiB of a streamed body before refusing it", sent>>20)
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// zeros is an endless stream of '0' characters.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

// serve serves app on a local port until the test ends and returns its base URL.
func serve(t *testing.T, app *fiber.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	return "http://" + ln.Addr().String()
}

// postChunked posts body in chunks, without a Content-Length.
func postChunked(t *testing.T, url, body string) *http.Response {
	t.Helper()
	// A reader of unknown length makes the client send chunks.
	resp, err := http.Post(url, "application/json", io.MultiReader(strings.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
