package request

import (
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"
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
			if _, err := app.Test(httptest.NewRequest("GET", "/?"+tc.rawQuery, nil)); err != nil {
				t.Fatal(err)
			}
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Raw = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
			if wantIssues := tc.rawQuery != "" && !tc.ok; (issues > 0) != wantIssues {
				t.Fatalf("issues = %d, want some: %v", issues, wantIssues)
			}
		})
	}
}
