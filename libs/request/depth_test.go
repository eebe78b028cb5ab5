package request

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
)

// nestedBody is a body nested depth levels deep: {"a":[{"a":[ ... ]}]}, objects and
// arrays alternating, the top-level object level 1.
func nestedBody(depth int) []byte {
	var b strings.Builder
	for i := 0; i < depth; i++ {
		if i%2 == 0 {
			b.WriteString(`{"a":`)
		} else {
			b.WriteString(`[`)
		}
	}
	b.WriteString(`1`)
	for i := depth - 1; i >= 0; i-- {
		if i%2 == 0 {
			b.WriteString(`}`)
		} else {
			b.WriteString(`]`)
		}
	}
	return []byte(b.String())
}

// The depth scan counts only the brackets that nest: those inside strings, escaped
// quotes included, do not, and the limit itself is allowed.
func TestJSONDepthScan(t *testing.T) {
	deepString := `{"s":"` + strings.Repeat("[{", 5000) + `"}`
	for _, tc := range []struct {
		name string
		body string
		deep bool
	}{
		{"the limit is allowed", string(nestedBody(MaxJSONDepth)), false},
		{"one past the limit is refused", string(nestedBody(MaxJSONDepth + 1)), true},
		{"nine thousand nine hundred and ninety levels", string(nestedBody(9990)), true},
		{"brackets inside a string do not nest", deepString, false},
		{"an escaped quote does not end the string", `{"s":"\"` + strings.Repeat("[", 100) + `"}`, false},
		{"an escaped backslash does end it", `{"s":"\\"` + `,"t":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, true},
		{"a key's brackets do not nest", `{"` + strings.Repeat("{", 100) + `":1}`, false},
		{"an unterminated string", `{"s":"` + strings.Repeat("[", 100), false},
		{"closing first is left to the parser", strings.Repeat("]", 10) + strings.Repeat("[", 100), false},
		{"flat and wide", "[" + strings.Repeat("[],", 10000) + "[]]", false},
	} {
		if got := jsonTooDeep([]byte(tc.body), MaxJSONDepth); got != tc.deep {
			t.Errorf("%s: jsonTooDeep = %v, want %v: bodies nested more than %d levels (brackets in strings not counted) are refused, others not",
				tc.name, got, tc.deep, MaxJSONDepth)
		}
	}
	body := nestedBody(9990)
	if n := testing.AllocsPerRun(10, func() { jsonTooDeep(body, MaxJSONDepth) }); n != 0 {
		t.Errorf("the depth scan allocates %v times per body: it must cost nothing but one pass", n)
	}
}

// A body nested 9,990 levels deep (Go's decoder stops at 10,000) is refused as too deep
// before anything parses it: by the document's middleware, by Decode and by the
// Validator, with a handful of allocations instead of the thousands a parse of every
// level takes.
func TestDeepBodiesAreRefusedBeforeParsing(t *testing.T) {
	deep := nestedBody(9990)
	assertTooDeep := func(t *testing.T, where string, status int, body []byte) {
		t.Helper()
		var env struct {
			Details []apierror.FieldIssues `json:"details"`
		}
		if status != 400 || json.Unmarshal(body, &env) != nil || len(env.Details) != 1 || len(env.Details[0].Issues) != 1 {
			t.Fatalf("%s: a body nested too deep must be one 400 too_big issue, got %d %.300s", where, status, body)
		}
		is := env.Details[0].Issues[0]
		if env.Details[0].Field != "body" || is.Code != "too_big" || !strings.Contains(is.Message, "64 levels") {
			t.Fatalf("%s: a body nested deeper than %d levels must be refused as too_big naming the limit, got %+v",
				where, MaxJSONDepth, env.Details)
		}
	}

	t.Run("document", func(t *testing.T) {
		h := testApp(t).Handler()
		var ctx fasthttpCtx
		ctx.reset(deep)
		h(&ctx.RequestCtx)
		assertTooDeep(t, "the document's middleware", ctx.Response.StatusCode(), ctx.Response.Body())
		allocs := testing.AllocsPerRun(5, func() {
			ctx.reset(deep)
			h(&ctx.RequestCtx)
		})
		t.Logf("refusing a body nested 9,990 deep: %v allocations", allocs)
		// A parse allocates at least once per level; the refusal, only its answer.
		if allocs > 200 {
			t.Errorf("refusing a body nested 9,990 deep took %v allocations: it must be refused before it is parsed", allocs)
		}
	})

	t.Run("Decode", func(t *testing.T) {
		app := fiber.New(fiber.Config{ErrorHandler: apierror.Renderer{BaseURL: "http://x"}.Handler()})
		app.Post("/v0/things", func(c *fiber.Ctx) error {
			var in map[string]any
			if err := Decode(c, &in); err != nil {
				return err
			}
			return c.SendStatus(200)
		})
		var ctx fasthttpCtx
		ctx.reset(deep)
		app.Handler()(&ctx.RequestCtx)
		assertTooDeep(t, "Decode", ctx.Response.StatusCode(), ctx.Response.Body())
	})

	t.Run("Validator", func(t *testing.T) {
		var in sample
		e := NewValidator().DecodeJSON(deep, &in)
		if e == nil {
			t.Fatal("Validator.DecodeJSON accepted a body nested 9,990 deep")
		}
		b, _ := json.Marshal(fiber.Map{"details": e.Details})
		assertTooDeep(t, "Validator.DecodeJSON", e.Status, b)
	})

	t.Run("the boundary", func(t *testing.T) {
		// The payload is level 2 of the body.
		at := []byte(`{"title":"a","payload":` + string(nestedBody(MaxJSONDepth-1)) + `}`)
		var in sample
		if e := NewValidator().DecodeJSON(at, &in); e != nil {
			t.Fatalf("a body nested exactly %d levels must pass the depth check, got %v", MaxJSONDepth, e.Details)
		}
		over := []byte(`{"title":"a","payload":` + string(nestedBody(MaxJSONDepth)) + `}`)
		e := NewValidator().DecodeJSON(over, &in)
		if e == nil {
			t.Fatalf("a body nested %d levels must be refused", MaxJSONDepth+1)
		}
		b, _ := json.Marshal(fiber.Map{"details": e.Details})
		assertTooDeep(t, "Validator.DecodeJSON at the limit + 1", e.Status, b)
	})
}

// BenchmarkDeepBodyRefusal measures refusing a body nested 9,990 deep through the
// document's middleware (a parse of it took ~0.5 s of CPU).
func BenchmarkDeepBodyRefusal(b *testing.B) {
	d, err := LoadDocument(b.Context(), []byte(testSpec))
	if err != nil {
		b.Fatal(err)
	}
	app := fiber.New()
	app.Use(d.Middleware())
	app.Post("/v0/things", func(c *fiber.Ctx) error { return c.SendStatus(201) })
	h := app.Handler()
	body := nestedBody(9990)
	var ctx fasthttpCtx
	b.ReportAllocs()
	for b.Loop() {
		ctx.reset(body)
		h(&ctx.RequestCtx)
		if ctx.Response.StatusCode() != 400 {
			b.Fatalf("status %d", ctx.Response.StatusCode())
		}
	}
}
