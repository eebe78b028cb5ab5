// Package application wires the gateway: configuration, database, key cache, rate limiter,
// upstreams, and the public and admin servers.
package application

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/customerapi/platform/api"
	"github.com/customerapi/platform/gateway/internal/admin"
	"github.com/customerapi/platform/gateway/internal/auth"
	"github.com/customerapi/platform/gateway/internal/conditional"
	"github.com/customerapi/platform/gateway/internal/docs"
	"github.com/customerapi/platform/gateway/internal/idempotency"
	"github.com/customerapi/platform/gateway/internal/keys"
	"github.com/customerapi/platform/gateway/internal/observe"
	"github.com/customerapi/platform/gateway/internal/proxy"
	publicsrv "github.com/customerapi/platform/gateway/internal/public"
	"github.com/customerapi/platform/gateway/internal/ratelimit"
	"github.com/customerapi/platform/gateway/migrations"
	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/internalauth"
	"github.com/customerapi/platform/libs/lifecycle"
	"github.com/customerapi/platform/libs/pagination"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/retention"
	"github.com/customerapi/platform/libs/server"
	"github.com/customerapi/platform/libs/telemetry"
)

// Config is the gateway's configuration, read from the environment.
type Config struct {
	HTTPAddr  string
	AdminAddr string
	// HTTPListener and AdminListener, when set, are served instead of listening on
	// HTTPAddr and AdminAddr (tests bind port 0 and pass them in).
	HTTPListener, AdminListener net.Listener
	DatabaseURL                 string
	AdminToken                  string
	KeyPepper                   []byte
	PublicBaseURL               string
	DefaultLimit                ratelimit.Policy
	RedisURL                    string
	RedisTimeout                time.Duration
	Upstreams                   map[string]string
	Proxy                       proxy.Options
	Downloads                   proxy.DownloadLimits
	KeyRefresh                  time.Duration
	// KeyMaxStaleness is how long the gateway keeps serving from its key cache without
	// reaching its database before it reports itself not ready (KEY_CACHE_MAX_STALENESS).
	KeyMaxStaleness time.Duration
	// UsageFlushEvery is how often the gateway writes when keys were last used
	// (KEY_USAGE_FLUSH_INTERVAL): the precision of lastUsedAt.
	UsageFlushEvery time.Duration
	LogLevel        string
	ShutdownTimeout time.Duration
	CursorSecret    []byte

	// InternalAuthSecret signs the internal headers sent to the services
	// (INTERNAL_AUTH_SECRET, at least 32 bytes, the same as theirs).
	InternalAuthSecret []byte
	// Pprof serves /debug/pprof on the admin listener (PPROF_ENABLED).
	Pprof bool
}

// DefaultKeyMaxStaleness is how long the gateway serves from its key cache while its
// database is unreachable (a failover takes well under it) before it turns not ready.
const DefaultKeyMaxStaleness = 5 * time.Minute

// UpstreamVar is the variable naming a service's base URL, e.g. UPSTREAM_TOPICS_URL.
func UpstreamVar(service string) string { return "UPSTREAM_" + strings.ToUpper(service) + "_URL" }

// ConfigFromEnv reads and checks the configuration.
func ConfigFromEnv(env *config.Env) (Config, error) {
	c := Config{
		HTTPAddr:        env.String("HTTP_ADDR", "127.0.0.1:25001"),
		AdminAddr:       env.String("ADMIN_ADDR", "127.0.0.1:25002"),
		DatabaseURL:     env.Required("DATABASE_URL"),
		AdminToken:      env.Required("ADMIN_TOKEN"),
		KeyPepper:       env.Secret("KEY_HASH_PEPPER", 32),
		PublicBaseURL:   env.String("PUBLIC_BASE_URL", "http://127.0.0.1:25001"),
		UsageFlushEvery: env.Duration("KEY_USAGE_FLUSH_INTERVAL", 30*time.Second),
		DefaultLimit: ratelimit.Policy{
			Limit:  env.Int("RATE_LIMIT_DEFAULT", 100),
			Window: env.Duration("RATE_LIMIT_WINDOW", time.Second),
		},
		RedisURL:     env.String("REDIS_URL", ""),
		RedisTimeout: env.Duration("RATE_LIMIT_REDIS_TIMEOUT", 50*time.Millisecond),
		Upstreams:    map[string]string{},
		Proxy: proxy.Options{
			Timeout:     env.Duration("UPSTREAM_TIMEOUT", 10*time.Second),
			DialTimeout: env.Duration("UPSTREAM_DIAL_TIMEOUT", time.Second),
			MaxConns:    env.Int("UPSTREAM_MAX_CONNS", 1024),
			// Uploads and downloads of large files stream for longer than a JSON call.
			TransferTimeout: env.Duration("UPSTREAM_TRANSFER_TIMEOUT", 10*time.Minute),
			MaxUploadBytes:  int64(env.Int("UPLOAD_MAX_BYTES", 50<<20)),
			// Every answer but a download is buffered whole: bound it.
			MaxResponseBytes: env.Int("UPSTREAM_MAX_RESPONSE_BYTES", proxy.DefaultMaxResponseBytes),
			UploadsPerTenant: env.Int("UPLOAD_MAX_PER_TENANT", proxy.DefaultUploadsPerTenant),
		},
		Downloads: proxy.DownloadLimits{
			PerToken:  env.Int("DOWNLOAD_MAX_PER_TOKEN", proxy.DefaultDownloadsPerToken),
			PerClient: env.Int("DOWNLOAD_MAX_PER_CLIENT", proxy.DefaultDownloadsPerClient),
		},
		KeyRefresh:      env.Duration("KEY_CACHE_REFRESH", time.Second),
		KeyMaxStaleness: env.Duration("KEY_CACHE_MAX_STALENESS", DefaultKeyMaxStaleness),
		LogLevel:        env.String("LOG_LEVEL", "info"),
		ShutdownTimeout: env.Duration("SHUTDOWN_TIMEOUT", 20*time.Second),
		CursorSecret:    env.Secret("CURSOR_SECRET", 16),
	}
	c.InternalAuthSecret = env.Secret("INTERNAL_AUTH_SECRET", internalauth.MinSecretBytes)
	if env.String("INTERNAL_AUTH_SECRET", "") == "" { // set but short: Secret said so
		env.Fail("INTERNAL_AUTH_SECRET", "is required (at least 32 bytes, e.g. 64 hex digits; the same as the services')")
	}
	c.Pprof = env.Bool("PPROF_ENABLED", false)
	// Uploads and downloads each have a pool of their own, as large as the ordinary one
	// unless set.
	c.Proxy.UploadMaxConns = env.Int("UPSTREAM_UPLOAD_MAX_CONNS", c.Proxy.MaxConns)
	c.Proxy.DownloadMaxConns = env.Int("UPSTREAM_DOWNLOAD_MAX_CONNS", c.Proxy.MaxConns)
	for _, s := range proxy.Services() {
		if u := env.String(UpstreamVar(s), ""); u != "" {
			c.Upstreams[s] = u
		}
	}
	if c.KeyPepper == nil {
		env.Fail("KEY_HASH_PEPPER", "is required (at least 32 bytes, e.g. 64 hex digits)")
	}
	if c.AdminToken != "" && len(c.AdminToken) < 16 {
		env.Fail("ADMIN_TOKEN", "must be at least 16 characters")
	}
	if c.DefaultLimit.Limit < 1 || c.DefaultLimit.Window <= 0 {
		env.Fail("RATE_LIMIT_DEFAULT", "limit and window must be positive")
	}
	if c.Proxy.TransferTimeout <= 0 {
		env.Fail("UPSTREAM_TRANSFER_TIMEOUT", "must be positive")
	}
	for name, n := range map[string]int{"UPSTREAM_UPLOAD_MAX_CONNS": c.Proxy.UploadMaxConns,
		"UPSTREAM_DOWNLOAD_MAX_CONNS": c.Proxy.DownloadMaxConns, "DOWNLOAD_MAX_PER_TOKEN": c.Downloads.PerToken} {
		if n < 1 {
			env.Fail(name, "must be positive")
		}
	}
	if c.Downloads.PerClient < 0 {
		env.Fail("DOWNLOAD_MAX_PER_CLIENT", "must be 0 (no cap) or positive")
	}
	if c.Proxy.UploadsPerTenant < 0 {
		env.Fail("UPLOAD_MAX_PER_TENANT", "must be 0 (no cap) or positive")
	}
	if c.Proxy.MaxUploadBytes < 1 || c.Proxy.MaxUploadBytes > 1<<30 {
		env.Fail("UPLOAD_MAX_BYTES", "must be from 1 to 1073741824")
	}
	if c.Proxy.MaxResponseBytes < 1<<20 || c.Proxy.MaxResponseBytes > 1<<30 {
		env.Fail("UPSTREAM_MAX_RESPONSE_BYTES", "must be from 1048576 to 1073741824")
	}
	if c.KeyRefresh <= 0 || c.KeyRefresh > 2*time.Second {
		env.Fail("KEY_CACHE_REFRESH", "must be between 1ms and 2s (revocation must show within 2 s)")
	}
	if c.KeyMaxStaleness < 10*time.Second || c.KeyMaxStaleness > time.Hour {
		env.Fail("KEY_CACHE_MAX_STALENESS", "must be from 10s to 1h")
	}
	c.CursorSecret = pagination.SecretOrRandom(c.CursorSecret)
	return c, env.Err()
}

// Application is the wired gateway.
type Application struct {
	cfg       Config
	log       *slog.Logger
	public    *server.Server
	admin     *server.Server
	cache     *keys.Cache
	limiter   *ratelimit.Local
	downloads *proxy.Downloads
	pool      *pgxpool.Pool
	usage     *keys.Usage
	opened    lifecycle.Stack
}

// New wires the gateway; Close releases what it opened (New does so itself when it fails).
func New(ctx context.Context, cfg Config, log *slog.Logger, tracing *telemetry.Tracing) (*Application, error) {
	a := &Application{cfg: cfg, log: log}
	fail := func(err error) (*Application, error) { a.Close(); return nil, err }

	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	reg := telemetry.NewRegistry()
	reg.MustRegister(telemetry.BuildInfo("gateway"))
	poolMetrics := postgres.NewPoolMetrics(reg)
	pool, err := postgres.ConnectWith(cctx, cfg.DatabaseURL, func(c *pgxpool.Config) {
		poolMetrics.Observe(c, "gateway", tracing.Provider)
	})
	if err != nil {
		return fail(err)
	}
	a.opened.Push(pool.Close)
	poolMetrics.Watch("gateway", pool)
	// Migrations are not under the start-up deadline: cut off, one would roll back and
	// start again on every restart. Each statement waits at most the lock timeout.
	if err := postgres.Migrate(ctx, pool, log, migrations.Set); err != nil {
		return fail(err)
	}

	hasher, err := keys.NewHasher(cfg.KeyPepper)
	if err != nil {
		return fail(err)
	}
	store := keys.NewStore(pool)
	idem := idempotency.NewStore(pool)
	usage := keys.NewUsage(store, log)
	cache := keys.NewCache(store, hasher, cfg.KeyRefresh, log, reg)
	if err := cache.Load(cctx); err != nil {
		return fail(err)
	}

	local := ratelimit.NewLocal()
	limitMetrics := ratelimit.NewMetrics(reg)
	var limiter ratelimit.Limiter = ratelimit.Counted{Local: local, Metrics: limitMetrics}
	if cfg.RedisURL != "" {
		opts, err := redis.ParseURL(cfg.RedisURL)
		if err != nil {
			return fail(fmt.Errorf("REDIS_URL: %w", err))
		}
		// Without it go-redis ignores the context's deadline and waits its own read
		// timeout (seconds) on a Redis that hangs: RATE_LIMIT_REDIS_TIMEOUT must bound a check.
		opts.ContextTimeoutEnabled = true
		rc := redis.NewClient(opts)
		a.opened.Push(func() { _ = rc.Close() })
		shared := ratelimit.NewShared(rc, local, cfg.RedisTimeout, log, reg)
		shared.Metrics = limitMetrics
		limiter = shared
	}

	upstreams := map[string]*proxy.Upstream{}
	var checks []server.Check
	for name, raw := range cfg.Upstreams {
		up, err := proxy.NewUpstream(name, raw, cfg.Proxy)
		if err != nil {
			return fail(err)
		}
		upstreams[name] = up
		checks = append(checks, server.Check{Name: name, Remote: true, Fn: func(ctx context.Context) error {
			d := time.Second
			if dl, ok := ctx.Deadline(); ok {
				d = time.Until(dl)
			}
			return up.Ready(d)
		}})
	}
	maxStale := cfg.KeyMaxStaleness
	if maxStale <= 0 {
		maxStale = DefaultKeyMaxStaleness
	}
	checks = append(checks,
		// Optional: keys are served from memory, and only the admin API needs the
		// database, so its outage must not take the gateway out of rotation by itself.
		server.Check{Name: "database", Optional: true, Fn: postgres.Check(pool)},
		// Required: a cache that has not loaded for too long may accept revoked keys.
		server.Check{Name: "keys", Fn: func(context.Context) error { return cache.Fresh(maxStale) }})

	doc, err := openAPI(cfg.PublicBaseURL)
	if err != nil {
		return fail(err)
	}
	tracer := tracing.Tracer("gateway")
	if cfg.Proxy.Signer, err = internalauth.New(cfg.InternalAuthSecret); err != nil {
		return fail(fmt.Errorf("INTERNAL_AUTH_SECRET: %w", err))
	}
	// /readyz on the public listener is open to anyone: it shows which checks fail but
	// their error texts only to a caller with the admin token.
	public, downloads, err := publicsrv.New(publicsrv.Config{
		Server: server.Config{Name: "gateway", Addr: cfg.HTTPAddr, Listener: cfg.HTTPListener, BaseURL: cfg.PublicBaseURL,
			ShutdownTimeout: cfg.ShutdownTimeout, ReadyDetailsToken: cfg.AdminToken},
		Log: log, Tracer: tracer, Registry: reg, Checks: checks,
		Cache: cache, Limiter: limiter, Default: cfg.DefaultLimit,
		Upstreams: upstreams, Proxy: cfg.Proxy, Downloads: cfg.Downloads,
		OpenAPI: doc.json, Routes: doc.routes, Family: familyOf(doc.families), Usage: usage,
		Idempotency: &idempotency.Middleware{Store: idem, Log: log, Streams: proxy.IsUpload},
		Conditional: &conditional.Middleware{Target: targetOf(doc.gets), Locker: &conditional.Locker{Pool: pool},
			Tenant: func(c *fiber.Ctx) string { return auth.Key(c).TenantIDs[0] }},
	})
	if err != nil {
		return fail(err)
	}

	validator := request.NewValidator()
	if err := validator.Register("tenantid", func(v reflect.Value) bool { return admin.ValidTenantID(v.String()) }); err != nil {
		return fail(err)
	}
	if err := validator.Register("scope", func(v reflect.Value) bool { return keys.ValidScope(v.String()) }); err != nil {
		return fail(err)
	}
	cursors, err := pagination.NewCodec(cfg.CursorSecret)
	if err != nil {
		return fail(err)
	}
	adminSrv := server.New(server.Config{Name: "gateway-admin", Addr: cfg.AdminAddr, Listener: cfg.AdminListener, BaseURL: cfg.PublicBaseURL,
		Metrics: true, Pprof: cfg.Pprof, ShutdownTimeout: cfg.ShutdownTimeout, ReadyDetailsToken: cfg.AdminToken},
		server.Deps{Log: log, Tracer: tracer, Registry: reg, Checks: checks})
	(&admin.Handlers{Store: store, Cache: cache, Hasher: hasher, Validator: validator, Cursors: cursors,
		Token: cfg.AdminToken}).Register(adminSrv.App)

	a.public, a.admin, a.cache, a.limiter, a.downloads, a.pool, a.usage = public, adminSrv, cache, local, downloads, pool, usage
	return a, nil
}

// Close releases the database pool and the Redis client.
func (a *Application) Close() { a.opened.Close() }

// document is what the gateway takes from the API document.
type document struct {
	json   []byte          // served at /v0/openapi.json, with the code samples
	routes []observe.Route // every path with the service that serves it
	gets   map[string]bool // the paths that can be read (GET)
	// families are the operations' resource families (their first tag), by "METHOD path".
	families map[string]string
}

// openAPI renders the embedded OpenAPI document as JSON, validating it on the way and
// adding the code samples (calling baseURL), and reads what the gateway needs of it.
func openAPI(baseURL string) (document, error) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		return document{}, fmt.Errorf("openapi: %w", err)
	}
	if err := docs.AddCodeSamples(doc, api.CodeSamples, api.SampleBaseURL, baseURL); err != nil {
		return document{}, err
	}
	d := document{gets: map[string]bool{}, families: map[string]string{}}
	if d.json, err = json.Marshal(doc); err != nil {
		return document{}, err
	}
	for path, item := range doc.Paths.Map() {
		up, ok := proxy.ServiceOf(path)
		if !ok {
			up = observe.Gateway // the document itself
		}
		d.routes = append(d.routes, observe.Route{Template: path, Upstream: up})
		d.gets[path] = item.Get != nil
		for method, op := range item.Operations() {
			if len(op.Tags) > 0 {
				d.families[method+" "+path] = op.Tags[0]
			}
		}
	}
	return d, nil
}

// familyOf returns the resource family of a request's operation, from the document.
func familyOf(families map[string]string) func(c *fiber.Ctx) (string, bool) {
	return func(c *fiber.Ctx) (string, bool) {
		f, ok := families[c.Method()+" "+observe.RouteName(c)]
		return f, ok
	}
}

// targetOf returns the resource an If-Match of a write is checked against: the request's
// path when the document can read it (GET), else its parent's when that can be read (an
// action such as POST /v0/pages/{page_id}/publish changes the page).
func targetOf(gets map[string]bool) func(c *fiber.Ctx) (string, bool) {
	return func(c *fiber.Ctx) (string, bool) {
		tmpl, path := observe.RouteName(c), c.Path()
		switch {
		case tmpl == "":
			return "", false
		case gets[tmpl]:
			return path, true
		}
		i, j := strings.LastIndexByte(tmpl, '/'), strings.LastIndexByte(path, '/')
		if i > 0 && j > 0 && gets[tmpl[:i]] {
			return path[:j], true
		}
		return "", false
	}
}

// Run serves until ctx ends, then shuts down gracefully.
func (a *Application) Run(ctx context.Context) error {
	return lifecycle.Run(ctx, lifecycle.Forever(a.cache.Run),
		lifecycle.Forever(func(ctx context.Context) { a.limiter.RunPruner(ctx, time.Minute) }),
		lifecycle.Forever(func(ctx context.Context) { a.usage.Run(ctx, a.cfg.UsageFlushEvery) }),
		(&retention.Pruner{Pool: a.pool, Log: a.log, Tables: []retention.Table{idempotency.RetentionTable(idempotency.DefaultTTL)}}).Run,
		a.public.Run, a.admin.Run)
}
