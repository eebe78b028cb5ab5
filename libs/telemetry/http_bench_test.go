package telemetry

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/customerapi/platform/libs/apierror"
)

// BenchmarkMiddleware measures the per-request cost of the observability middleware
// (trace span, metrics, access-log check) on a Fiber app, without the network.
func BenchmarkMiddleware(b *testing.B) {
	tr, err := SetupTracing(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for _, withMiddleware := range []bool{false, true} {
		app := fiber.New()
		if withMiddleware {
			app.Use(Middleware(tr.Tracer("b"), NewHTTPMetrics(NewRegistry(), "b"), log, apierror.Renderer{}))
		}
		app.Get("/v0/topics/:id", func(c *fiber.Ctx) error { return c.SendString("{}") })
		h := app.Handler()
		name := "bare"
		if withMiddleware {
			name = "middleware"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var ctx fasthttp.RequestCtx
				for pb.Next() {
					ctx.Request.Reset()
					ctx.Response.Reset()
					ctx.Request.SetRequestURI("/v0/topics/topic_1")
					ctx.Request.Header.SetMethod("GET")
					h(&ctx)
				}
			})
		})
	}
}
