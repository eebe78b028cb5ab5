// Package public wires the gateway's public listener: the shared server middleware, the
// gateway's request metrics, the API document and reference, signed downloads, and the
// authenticated, rate-limited proxy of every other /v0 route.
package public

import (
	"log/slog"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/customerapi/platform/gateway/internal/auth"
	"github.com/customerapi/platform/gateway/internal/conditional"
	"github.com/customerapi/platform/gateway/internal/docs"
	"github.com/customerapi/platform/gateway/internal/idempotency"
	"github.com/customerapi/platform/gateway/internal/keys"
	"github.com/customerapi/platform/gateway/internal/observe"
	"github.com/customerapi/platform/gateway/internal/proxy"
	"github.com/customerapi/platform/gateway/internal/ratelimit"
	"github.com/customerapi/platform/libs/server"
)

// Config is what the public listener is built from.
type Config struct {
	Server    server.Config
	Log       *slog.Logger
	Tracer    trace.Tracer
	Registry  *prometheus.Registry
	Checks    []server.Check
	Cache     *keys.Cache
	Limiter   ratelimit.Limiter
	Default   ratelimit.Policy
	Upstreams map[string]*proxy.Upstream
	Proxy     proxy.Options
	Downloads proxy.DownloadLimits
	// Idempotency runs POSTs with an Idempotency-Key at most once (nil: the header is
	// ignored).
	Idempotency *idempotency.Middleware
	// Conditional answers conditional requests and sets ETags (nil: neither); its
	// Current is set here, to the proxy's.
	Conditional *conditional.Middleware
	// OpenAPI is the API document as JSON; Routes are its paths with their services.
	OpenAPI []byte
	Routes  []observe.Route
	// Family names a request's resource family, for keys with scopes (auth.Middleware).
	Family func(c *fiber.Ctx) (string, bool)
	// Usage records when keys were last used (nil: not recorded).
	Usage *keys.Usage
}

// New builds the public server; the caller runs it.
func New(cfg Config) (*server.Server, *proxy.Downloads, error) {
	// Requests counted by upstream and by the document's route templates; the generic
	// request metrics and the spans take their route names from it too.
	requests := observe.New(cfg.Registry, cfg.Routes, proxy.ServiceOf)
	refusals := observe.NewRefusals(cfg.Registry)
	sc := cfg.Server
	sc.RouteName = observe.RouteName
	public := server.New(sc, server.Deps{Log: cfg.Log, Tracer: cfg.Tracer, Registry: cfg.Registry, Checks: cfg.Checks})
	// After the probes (not counted here), before everything the gateway serves.
	public.App.Use(requests.Middleware(public.Render))
	// Request bodies stream: an upload passes through to its service as it arrives instead
	// of being buffered whole (and multipart forms are not pre-parsed into memory or
	// temporary files); every other route reads its body under the 1 MiB limit.
	srv := public.App.Server()
	srv.StreamRequestBody = true
	srv.DisablePreParseMultipartForm = true
	popts := cfg.Proxy
	popts.Refusals = refusals
	px := proxy.New(cfg.Upstreams, popts)
	openapiJSON := cfg.OpenAPI
	public.App.Get("/v0/openapi.json", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(openapiJSON)
	})
	// The reference and the error type pages are public, like the document itself.
	if err := docs.Register(public.App, sc.BaseURL); err != nil {
		return nil, nil, err
	}
	// Signed downloads need no key (the signature is the authorisation); GET and HEAD
	// only: any other method on the path goes through authentication like every route.
	// Without a key there is no key's rate limit: caps per link and per client instead.
	downloads := proxy.NewDownloads(cfg.Downloads)
	downloads.Refusals = refusals
	public.App.Get(proxy.FilesRoute, px.Files(downloads))
	public.App.Use((&auth.Middleware{Cache: cfg.Cache, Limiter: cfg.Limiter, Default: cfg.Default,
		Refusals: refusals, Family: cfg.Family, Usage: cfg.Usage}).Handler())
	if cfg.Idempotency != nil {
		public.App.Use(cfg.Idempotency.Handler())
	}
	if cfg.Conditional != nil {
		cfg.Conditional.Current = px.Current
		public.App.Use(cfg.Conditional.Handler())
	}
	public.App.All("/*", px.Handler())
	return public, downloads, nil
}
