package request

import (
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
)

func TestQueryRawRefusesWhatPostgreSQLCannotStore(t *testing.T) {
	for _, tc := range []struct {
		name, rawQuery, want string
		ok                   bool
	}{
		{"plain", "q=abc", "abc", true},
		{"unicode", "q=%C3%A9t%C3%A9", "été", true},
		{"absent", "", "", false},
		{"NUL", "q=a%00b", "", false},
		{"invalid UTF-8", "q=%ff", "", false},
		{"repeated", "q=a&q=b", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := fiber.New()
			var got string
			var ok bool
			var issues int
			app.Get("/", func(c *fiber.Ctx) error {
				q := NewQuery(c)
				got, ok = q.Raw("q")
				issues = len(q.Issues())
				return nil
			})
			resp, err := app.Test(httptest.NewRequest("GET", "/?"+tc.rawQuery, nil))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Raw = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
			if wantIssues := tc.rawQuery != "" && !tc.ok; (issues > 0) != wantIssues {
				t.Fatalf("issues = %d, want some: %v", issues, wantIssues)
			}
		})
	}
}

func TestTextPathRefusesWhatNoIDCanBe(t *testing.T) {
	app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
		return c.SendStatus(apierror.From(err).Status)
	}})
	app.Get("/v0/things/:id", TextPath(), func(c *fiber.Ctx) error { return c.SendStatus(200) })
	for path, want := range map[string]int{
		"/v0/things/thing_1": 200,
		"/v0/things/%C3%A9t": 200, // escapes stay escapes: valid text
		"/v0/things/\xff":    404,
		"/v0/things/a\xc3":   404,
	} {
		req := httptest.NewRequest("GET", "/", nil)
		req.URL.RawPath, req.URL.Path = "", path
		req.RequestURI = path
		resp, err := app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%q: %d, want %d", path, resp.StatusCode, want)
		}
	}
}
