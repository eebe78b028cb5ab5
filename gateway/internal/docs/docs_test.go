package docs_test

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/api"
	"github.com/customerapi/platform/gateway/internal/docs"
	"github.com/customerapi/platform/libs/apierror"
)

func newApp(t *testing.T) *fiber.App {
	app := fiber.New(fiber.Config{ErrorHandler: apierror.Renderer{BaseURL: "https://api.example.com"}.Handler()})
	if err := docs.Register(app, "https://api.example.com/"); err != nil {
		t.Fatal(err)
	}
	return app
}

func get(t *testing.T, app *fiber.App, path, accept string) (int, string, string) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Content-Type"), string(b)
}

func TestReferencePageAndItsBundle(t *testing.T) {
	app := newApp(t)
	status, ct, body := get(t, app, "/docs", "text/html")
	if status != 200 || !strings.HasPrefix(ct, "text/html") || !strings.Contains(body, `<redoc spec-url="/v0/openapi.json"`) ||
		!strings.Contains(body, `<script src="/docs/redoc.standalone.js">`) || strings.Contains(body, "https://") {
		t.Fatalf("/docs: %d %s\n%s", status, ct, body)
	}
	status, ct, body = get(t, app, "/docs/redoc.standalone.js", "")
	if status != 200 || !strings.HasPrefix(ct, "text/javascript") || len(body) < 500_000 {
		t.Fatalf("bundle: %d %s, %d bytes", status, ct, len(body))
	}
}

// Every code of the document's ErrorEnvelope has a page, HTML by default and the problem
// description as JSON when asked; anything else is a 404 that reflects nothing.
func TestErrorTypePages(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, c := range doc.Components.Schemas["ErrorEnvelope"].Value.Properties["code"].Value.Enum {
		codes = append(codes, c.(string))
	}
	var ours []string
	for _, e := range docs.ErrorTypes {
		ours = append(ours, string(e.Code))
	}
	slices.Sort(codes)
	slices.Sort(ours)
	if !slices.Equal(codes, ours) {
		t.Fatalf("error pages for %v, the document's codes are %v", ours, codes)
	}

	app := newApp(t)
	for _, e := range docs.ErrorTypes {
		slug := strings.ToLower(string(e.Code))
		status, ct, body := get(t, app, "/errors/"+slug, "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
		if status != 200 || !strings.HasPrefix(ct, "text/html") || !strings.Contains(body, "<code>"+string(e.Code)+"</code>") {
			t.Fatalf("%s (browser): %d %s\n%s", slug, status, ct, body)
		}
		if strings.Contains(body, "`") {
			t.Errorf("%s (browser): the page shows Markdown backticks instead of <code>:\n%s", slug, body)
		}
		if strings.Contains(e.Description, "`details`") && !strings.Contains(body, "<code>details</code>") {
			t.Errorf("%s (browser): `details` is not rendered as <code>details</code>", slug)
		}
		status, ct, body = get(t, app, "/errors/"+slug, "application/json")
		var p map[string]any
		if status != 200 || ct != "application/problem+json" || json.Unmarshal([]byte(body), &p) != nil ||
			p["type"] != "https://api.example.com/errors/"+slug || p["code"] != string(e.Code) || p["status"] != float64(e.Status) || p["description"] == "" {
			t.Fatalf("%s (JSON): %d %s %s", slug, status, ct, body)
		}
	}
	for _, path := range []string{"/errors/NOT_FOUND", "/errors/%3Cscript%3Ealert(1)%3C%2Fscript%3E", "/errors/teapot"} {
		status, _, body := get(t, app, path, "text/html")
		if status != 404 || strings.Contains(body, "script") || strings.Contains(body, "teapot") || !strings.Contains(body, `"code":"NOT_FOUND"`) {
			t.Fatalf("%s: %d %s", path, status, body)
		}
	}
}
