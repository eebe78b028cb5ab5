package request

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"
)

const formSpec = `
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /v0/uploads:
    post:
      requestBody:
        required: true
        content:
          multipart/form-data:
            schema:
              type: object
              additionalProperties: false
              required: [file, kind]
              properties:
                file: {type: string, format: binary}
                kind: {type: string, enum: [a, b]}
                name: {type: string, minLength: 1, maxLength: 5}
                hidden: {type: boolean}
                size: {type: integer, minimum: 1}
                tags:
                  type: array
                  maxItems: 2
                  items: {type: string, pattern: '^\S+$'}
      responses: {"201": {description: ok}}
`

// The fields of a multipart body are judged by the operation's schema like a JSON body:
// each value read as its property's type, a repeated part as a list, every problem an
// issue at the part's name (and index).
func TestFormIssues(t *testing.T) {
	d, err := LoadDocument(t.Context(), []byte(formSpec))
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New()
	var got []string
	var values map[string][]string
	app.Post("/v0/uploads", func(c *fiber.Ctx) error {
		got = nil
		for _, is := range d.FormIssues(c, values) {
			got = append(got, fmt.Sprintf("%s:%v", is.Code, is.Path))
		}
		return nil
	})
	for _, tc := range []struct {
		name   string
		values map[string][]string
		want   string
	}{
		{"valid", map[string][]string{"file": {""}, "kind": {"a"}, "name": {"n"}, "hidden": {"TRUE"}, "size": {"3"}, "tags": {"x", "y"}}, "[]"},
		{"boolean as 0", map[string][]string{"file": {""}, "kind": {"b"}, "hidden": {"0"}}, "[]"},
		{"missing required", map[string][]string{"name": {"n"}}, "[invalid_type:[file] invalid_type:[kind]]"},
		{"out of enum", map[string][]string{"file": {""}, "kind": {"c"}}, "[invalid_enum_value:[kind]]"},
		{"too long", map[string][]string{"file": {""}, "kind": {"a"}, "name": {"toolong"}}, "[too_big:[name]]"},
		{"not a boolean", map[string][]string{"file": {""}, "kind": {"a"}, "hidden": {"yes"}}, "[invalid_type:[hidden]]"},
		{"not an integer", map[string][]string{"file": {""}, "kind": {"a"}, "size": {"1.5"}}, "[invalid_type:[size]]"},
		{"under minimum", map[string][]string{"file": {""}, "kind": {"a"}, "size": {"0"}}, "[too_small:[size]]"},
		{"a list too long", map[string][]string{"file": {""}, "kind": {"a"}, "tags": {"x", "y", "z"}}, "[too_big:[tags]]"},
		{"an item off its pattern", map[string][]string{"file": {""}, "kind": {"a"}, "tags": {"x", "y z"}}, "[invalid_string:[tags 1]]"},
		{"one value sent twice", map[string][]string{"file": {"", ""}, "kind": {"c", "a"}}, "[invalid_type:[file] invalid_type:[kind] invalid_enum_value:[kind]]"},
		{"unknown part", map[string][]string{"file": {""}, "kind": {"a"}, "color": {"red"}}, "[unrecognized_keys:[color]]"},
		{"parts not read", map[string][]string{"file": {""}, "kind": nil, "color": nil}, "[unrecognized_keys:[color]]"},
	} {
		values = tc.values
		resp, err := app.Test(httptest.NewRequest("POST", "/v0/uploads", nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if fmt.Sprint(got) != tc.want && !(tc.want == "[]" && got == nil) {
			t.Errorf("%s: %v, want %s", tc.name, got, tc.want)
		}
	}
}
