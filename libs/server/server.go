// Package server bootstraps the HTTP server of every process: a Fiber app with panic
// recovery, request IDs, tracing, metrics, access logs, the error envelope, /healthz,
// /readyz and /metrics, and graceful shutdown within a deadline.
package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/pprof"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/jsonenc"
	"github.com/customerapi/platform/libs/requestid"
	"github.com/customerapi/platform/libs/telemetry"
)

// Check is a named readiness check (database, broker, upstream).
type Check struct {
	Name string
	Fn   func(ctx context.Context) error
	// Optional checks are reported but do not make the process unready: the broker is
	// one, since the outbox keeps writes safe while Kafka is away, and taking every pod
	// out of service for it would turn a broker outage into an API outage.
	Optional bool
	// Remote checks ask another process (the gateway's upstream services). /readyz runs
	// them; /readyz/local leaves them out, for a pod's readiness probe: one service down
	// must not take every gateway replica out of rotation, since the gateway answers that
	// service's routes with 503 by itself.
	Remote bool
}

// Config configures a server.
type Config struct {
	// Name is the process name used in logs and metrics.
	Name string
	// Addr is the listen address, e.g. 127.0.0.1:25011.
	Addr string
	// Listener, when set, is served instead of listening on Addr: a caller that bound
	// port 0 itself knows the address before the server starts, and no other process can
	// take the port between its choice and the listen (tests).
	Listener net.Listener
	// BaseURL is the public base address used in error type URLs.
	BaseURL string
	// BodyLimit is the largest request body read at all (default 4 MiB); past it the
	// connection is answered and closed before the body is read. JSON bodies over 1 MiB
	// get a clean 400 from decoding; keeping the hard limit above that lets clients read
	// that answer instead of a reset connection.
	BodyLimit int
	// ReadTimeout, WriteTimeout and IdleTimeout bound connections (defaults 30s, 30s, 120s).
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// ShutdownTimeout bounds graceful shutdown (default 20s).
	ShutdownTimeout time.Duration
	// ReadyTimeout bounds one run of the readiness checks (default 2s).
	ReadyTimeout time.Duration
	// ReadyCacheTTL is how long a run of the readiness checks answers /readyz (default
	// 1s; negative: every call runs them). Concurrent calls always share one run, so
	// however often /readyz is called, the checks (and the upstreams and brokers they
	// reach) see at most one run per TTL.
	ReadyCacheTTL time.Duration
	// ReadyDetailsToken, when set, lets a caller presenting "Authorization: Bearer
	// <token>" read the failing checks' error texts in /readyz; everybody else reads only
	// which checks fail. The texts name hosts, ports and users, so they are not for the
	// public (the gateway's /readyz is public); they are always logged.
	ReadyDetailsToken string
	// Metrics serves /metrics on this listener. Only internal listeners set it (a
	// service's metrics listener, the gateway's admin listener), never the API's.
	Metrics bool
	// Pprof also serves /debug/pprof on a Metrics listener (PPROF_ENABLED, default off).
	Pprof bool
	// RouteName, optional, names a request's route in the request metrics and its span
	// when Fiber's pattern does not: the gateway serves every proxied route through "/*"
	// and names them after the API document's paths.
	RouteName func(c *fiber.Ctx) string
}

// Deps are what the server needs from the process.
type Deps struct {
	Log      *slog.Logger
	Tracer   trace.Tracer
	Registry *prometheus.Registry
	Checks   []Check
}

// Server is a configured Fiber app plus its lifecycle.
type Server struct {
	App      *fiber.App
	Render   apierror.Renderer
	cfg      Config
	deps     Deps
	draining atomic.Bool
	ready    readiness
}

// New builds the app with the shared middleware and probe routes; the caller adds its
// own routes to s.App before Run.
//
// nolint: contextcheck // its handlers log with c.UserContext(), the request's own context.
func New(cfg Config, deps Deps) *Server {
	if cfg.BodyLimit == 0 {
		cfg.BodyLimit = 4 * apierror.MaxBodyBytes
	}
	cfg.ReadTimeout = orDefault(cfg.ReadTimeout, 30*time.Second)
	cfg.WriteTimeout = orDefault(cfg.WriteTimeout, 30*time.Second)
	cfg.IdleTimeout = orDefault(cfg.IdleTimeout, 120*time.Second)
	cfg.ShutdownTimeout = orDefault(cfg.ShutdownTimeout, 20*time.Second)
	cfg.ReadyTimeout = orDefault(cfg.ReadyTimeout, 2*time.Second)
	cfg.ReadyCacheTTL = orDefault(cfg.ReadyCacheTTL, time.Second)

	s := &Server{cfg: cfg, deps: deps, Render: apierror.Renderer{BaseURL: cfg.BaseURL, Log: deps.Log}}
	s.App = fiber.New(fiber.Config{
		AppName:               cfg.Name,
		BodyLimit:             cfg.BodyLimit,
		ReadTimeout:           cfg.ReadTimeout,
		WriteTimeout:          cfg.WriteTimeout,
		IdleTimeout:           cfg.IdleTimeout,
		ErrorHandler:          s.Render.Handler(),
		JSONEncoder:           jsonenc.Marshal, // no HTML escaping: '<' is 1 byte, not 6
		DisableStartupMessage: true,
		StrictRouting:         false,
		CaseSensitive:         true,
	})
	s.App.Use(requestid.Middleware())
	if deps.Registry != nil && deps.Tracer != nil {
		m := telemetry.NewHTTPMetrics(deps.Registry, cfg.Name)
		m.RouteName = cfg.RouteName
		s.App.Use(telemetry.Middleware(deps.Tracer, m, deps.Log, s.Render))
	}
	// Inside the telemetry middleware, so a panic is counted and logged as the 500 it becomes.
	s.App.Use(recover.New(recover.Config{
		EnableStackTrace: true,
		StackTraceHandler: func(c *fiber.Ctx, e any) {
			deps.Log.ErrorContext(c.UserContext(), "panic while serving request", slog.Any("panic", e),
				slog.String("path", telemetry.RedactPath(c.Path(), c.Route().Path)))
		},
	}))
	// Counted and logged like any other refusal, so after telemetry.
	s.App.Use(refuseEncodedBodies())
	s.App.Get("/healthz", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "ok"}) })
	s.App.Get("/readyz", s.readyz)
	s.App.Get("/readyz/local", s.readyz)
	if cfg.Metrics && deps.Registry != nil {
		s.App.Get("/metrics", telemetry.MetricsHandler(deps.Registry))
		if cfg.Pprof { // profiles only on the internal listener, and only when asked for
			s.App.Use(pprof.New())
		}
	}
	return s
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Ready runs every readiness check concurrently (without the remote ones when local)
// and returns the failures by name: required ones in failed, optional ones in degraded.
func (s *Server) Ready(ctx context.Context, local bool) (failed, degraded map[string]string) {
	failed, degraded = map[string]string{}, map[string]string{}
	if s.draining.Load() {
		failed["server"] = "shutting down"
		return failed, degraded
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ReadyTimeout)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, ch := range s.deps.Checks {
		if local && ch.Remote {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := ch.Fn(ctx); err != nil {
				mu.Lock()
				if ch.Optional {
					degraded[ch.Name] = err.Error()
				} else {
					failed[ch.Name] = err.Error()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed, degraded
}

// readyz answers whether the process can serve: its checks, run once for every caller
// waiting on them and cached briefly.
//
// nolint: contextcheck // one check serves every caller waiting on it, so none's context may end it.
func (s *Server) readyz(c *fiber.Ctx) error {
	local := strings.HasSuffix(c.Path(), "/local")
	var r readyResult
	if s.draining.Load() {
		r.failed = map[string]string{"server": "shutting down"}
	} else {
		r = s.ready.get(local, s.cfg.ReadyCacheTTL, func() readyResult {
			// Not the request's context: the run is shared by every caller waiting on it.
			failed, degraded := s.Ready(context.Background(), local)
			s.logChange(local, failed, degraded)
			return readyResult{failed: failed, degraded: degraded}
		})
	}
	reveal := s.cfg.ReadyDetailsToken != "" && bearerIs(c.Get(fiber.HeaderAuthorization), s.cfg.ReadyDetailsToken)
	if len(r.failed) == 0 {
		if len(r.degraded) > 0 {
			return c.JSON(fiber.Map{"status": "degraded", "degraded": shown(r.degraded, reveal)})
		}
		return c.JSON(fiber.Map{"status": "ready"})
	}
	e := apierror.Unavailable(fmt.Sprintf("%s is not ready", s.cfg.Name))
	e.Details = shown(r.failed, reveal)
	return e
}

// logChange logs the failing checks with their error texts whenever the set of failures
// differs from the previous run's, so that operators see what callers are not shown.
func (s *Server) logChange(local bool, failed, degraded map[string]string) {
	key := fmt.Sprint(local, failed, degraded)
	if !s.ready.changed(key) || s.deps.Log == nil {
		return
	}
	if len(failed) == 0 && len(degraded) == 0 {
		s.deps.Log.Info("readiness checks pass", slog.Bool("local", local))
		return
	}
	s.deps.Log.Warn("readiness checks failing", slog.Bool("local", local),
		slog.Any("failed", failed), slog.Any("degraded", degraded))
}

// shown is what a caller reads of the failures: the error texts for the details token's
// holder, else only which checks fail.
func shown(failures map[string]string, reveal bool) map[string]string {
	if reveal {
		return failures
	}
	out := make(map[string]string, len(failures))
	for name := range failures {
		out[name] = "failing"
	}
	return out
}

// bearerIs reports, in constant time, whether an Authorization header carries token.
func bearerIs(header, token string) bool {
	got, ok := strings.CutPrefix(header, "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// Run serves until ctx is cancelled, then stops accepting connections, fails readiness,
// and waits up to the shutdown timeout for requests in flight.
func (s *Server) Run(ctx context.Context) error {
	if s.cfg.Listener != nil {
		return s.Serve(ctx, s.cfg.Listener)
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("%s: listen %s: %w", s.cfg.Name, s.cfg.Addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on an existing listener.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- s.App.Listener(ln) }()
	s.deps.Log.Info("listening", slog.String("addr", ln.Addr().String()))
	select {
	case err := <-errc:
		return fmt.Errorf("%s: serve: %w", s.cfg.Name, err)
	case <-ctx.Done():
	}
	s.draining.Store(true)
	s.deps.Log.Info("shutting down", slog.Duration("deadline", s.cfg.ShutdownTimeout))
	if err := s.App.ShutdownWithTimeout(s.cfg.ShutdownTimeout); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: shutdown: %w", s.cfg.Name, err)
	}
	return nil
}
