package request_test

import (
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/customerapi/platform/api"
	"github.com/customerapi/platform/libs/request"
)

// BenchmarkDocumentCreateTopic judges `POST /v0/topics` with the platform's document, as
// every create is judged before its handler runs: the operation's lookup, the body's parse
// and its schema walk, then the handler's decode into its struct.
func BenchmarkDocumentCreateTopic(b *testing.B) {
	doc, err := request.LoadDocument(b.Context(), api.Spec)
	if err != nil {
		b.Fatal(err)
	}
	type topicCreate struct {
		Title     string                   `json:"title"`
		SortOrder *int64                   `json:"sortOrder"`
		Purpose   request.Nullable[string] `json:"purpose"`
		IsDefault *bool                    `json:"isDefault"`
	}
	app := fiber.New()
	app.Post("/v0/topics", doc.Middleware(), func(c *fiber.Ctx) error {
		var in topicCreate
		if err := request.Decode(c, &in); err != nil {
			return err
		}
		return c.SendStatus(201)
	})
	h := app.Handler()
	var ctx fasthttp.RequestCtx
	body := []byte(`{"title":"Pricing","purpose":"why we price","sortOrder":3}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod(fasthttp.MethodPost)
		ctx.Request.SetRequestURI("/v0/topics")
		ctx.Request.Header.SetContentType("application/json")
		ctx.Request.SetBody(body)
		h(&ctx)
		if ctx.Response.StatusCode() != 201 {
			b.Fatalf("%d %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}
