// Package service is the runtime every service shares: configuration of the common
// settings, the database pool and migrations, telemetry, the HTTP server with its probes,
// the outbox relay, background tasks, and graceful shutdown. A service's main only names
// itself, its migrations and its routes.
package service

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/customerapi/platform/api"
	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/consumer"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/internalauth"
	"github.com/customerapi/platform/libs/lifecycle"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/pagination"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/retention"
	"github.com/customerapi/platform/libs/server"
	"github.com/customerapi/platform/libs/telemetry"
	"github.com/customerapi/platform/libs/tenant"
)

// Config holds the settings every service shares.
type Config struct {
	// Name is the service name (logs, metrics, traces, consumer groups).
	Name string
	// HTTPAddr is the API's listen address (HTTP_ADDR).
	HTTPAddr string
	// MetricsAddr is the internal listener of /metrics and, when Pprof is set,
	// /debug/pprof (METRICS_ADDR; locally the API port + 100).
	MetricsAddr string
	// Pprof serves /debug/pprof on the metrics listener (PPROF_ENABLED, default false).
	Pprof bool
	// HTTPListener and MetricsListener, when set, are served instead of listening on
	// HTTPAddr and MetricsAddr (tests bind port 0 and pass them in).
	HTTPListener, MetricsListener net.Listener
	// InternalAuthSecret is the secret shared with the gateway that signs the internal
	// headers (INTERNAL_AUTH_SECRET, at least 32 bytes, required).
	InternalAuthSecret []byte
	// InternalAuthExtraSecret is a second secret whose signatures are accepted too, while
	// the shared secret is being rotated (INTERNAL_AUTH_EXTRA_SECRET, optional).
	InternalAuthExtraSecret []byte
	// DatabaseURL is the service's own database (DATABASE_URL).
	DatabaseURL string
	// PublicBaseURL is the API's public address, used in error type URLs and absolute
	// links (PUBLIC_BASE_URL).
	PublicBaseURL string
	// CursorSecret signs pagination cursors (CURSOR_SECRET, at least 16 bytes; random per
	// process when unset, which breaks cursors across replicas and restarts).
	CursorSecret []byte
	Kafka        events.KafkaConfig
	// LogLevel is debug, info, warn or error (LOG_LEVEL).
	LogLevel string
	// ShutdownTimeout bounds graceful shutdown (SHUTDOWN_TIMEOUT).
	ShutdownTimeout time.Duration
	// ConnectTimeout bounds connecting to the database at start (DATABASE_CONNECT_TIMEOUT,
	// default 60 s). Migrations are not under it.
	ConnectTimeout time.Duration
	// MigrationLockTimeout is the longest a migration's statement waits for a lock
	// before the migration is rolled back and tried again (MIGRATION_LOCK_TIMEOUT,
	// default 5 s).
	MigrationLockTimeout time.Duration
	// InboxRetention is how long a processed event's ID is kept to deduplicate a
	// redelivery (INBOX_RETENTION, default 192h; 0 keeps them forever). It must exceed
	// the consumed topics' retention.ms: an event can be redelivered as long as Kafka
	// keeps it.
	InboxRetention time.Duration
	// DeadLetterRetention is how long the inbox's and the outbox's dead letters are kept
	// (DEAD_LETTER_RETENTION, default 336h; 0 keeps them forever).
	DeadLetterRetention time.Duration
	// RetentionInterval separates the pruner's passes (default retention.DefaultInterval).
	RetentionInterval time.Duration
}

// ConfigFromEnv reads the shared settings; defaultAddr is the service's local port (its
// metrics listener defaults to that port + 100).
func ConfigFromEnv(env *config.Env, name, defaultAddr string) Config {
	c := Config{
		Name:                 name,
		HTTPAddr:             env.String("HTTP_ADDR", defaultAddr),
		DatabaseURL:          env.Required("DATABASE_URL"),
		PublicBaseURL:        env.String("PUBLIC_BASE_URL", "http://127.0.0.1:25001"),
		CursorSecret:         env.Secret("CURSOR_SECRET", 16),
		Kafka:                events.KafkaFromEnv(env),
		LogLevel:             env.String("LOG_LEVEL", "info"),
		ShutdownTimeout:      env.Duration("SHUTDOWN_TIMEOUT", 20*time.Second),
		ConnectTimeout:       env.Duration("DATABASE_CONNECT_TIMEOUT", 60*time.Second),
		MigrationLockTimeout: env.Duration("MIGRATION_LOCK_TIMEOUT", postgres.DefaultLockTimeout),
		InboxRetention:       env.Duration("INBOX_RETENTION", 192*time.Hour),
		DeadLetterRetention:  env.Duration("DEAD_LETTER_RETENTION", 336*time.Hour),
	}
	if c.InboxRetention > 0 && c.InboxRetention < 24*time.Hour {
		env.Fail("INBOX_RETENTION", "must be 0 (kept forever) or at least 24h, and longer than the consumed topics' retention.ms")
	}
	c.MetricsAddr = env.String("METRICS_ADDR", defaultMetricsAddr(defaultAddr))
	c.Pprof = env.Bool("PPROF_ENABLED", false)
	c.InternalAuthSecret = env.Secret("INTERNAL_AUTH_SECRET", internalauth.MinSecretBytes)
	c.InternalAuthExtraSecret = env.Secret("INTERNAL_AUTH_EXTRA_SECRET", internalauth.MinSecretBytes)
	c.CursorSecret = pagination.SecretOrRandom(c.CursorSecret)
	if env.String("INTERNAL_AUTH_SECRET", "") == "" { // set but short: Secret said so
		env.Fail("INTERNAL_AUTH_SECRET", "is required (at least 32 bytes, e.g. 64 hex digits; the same as the gateway's)")
	}
	switch c.MetricsAddr {
	case "":
		env.Fail("METRICS_ADDR", "is required")
	case c.HTTPAddr:
		env.Fail("METRICS_ADDR", "must differ from HTTP_ADDR (the API listener serves no metrics)")
	}
	return c
}

// defaultMetricsAddr is the metrics listener next to an API address: the same host, the
// port + 100 (127.0.0.1:25011 gives 127.0.0.1:25111).
func defaultMetricsAddr(httpAddr string) string {
	host, port, err := net.SplitHostPort(httpAddr)
	n, err2 := strconv.Atoi(port)
	if err != nil || err2 != nil {
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(n+100))
}

// Runtime is a running service's shared machinery.
type Runtime struct {
	Config   Config
	Log      *slog.Logger
	Tracer   trace.Tracer
	Registry *prometheus.Registry
	Pool     *pgxpool.Pool
	Server   *server.Server
	Cursors  *pagination.Codec
	// Metrics is the internal listener beside Server (the API's): /metrics, and
	// /debug/pprof when enabled.
	Metrics *server.Server
	// Signer verifies the gateway's signature of the internal headers.
	Signer *internalauth.Signer
	// API is the router for the service's /v0 routes; requests on it carry a tenant,
	// signed by the gateway.
	API fiber.Router
	// GatewayOnly refuses with 401 a request the gateway did not sign; for routes outside
	// /v0, which have no tenant (signed downloads).
	GatewayOnly fiber.Handler
	// Document is the OpenAPI document that judges every /v0 request; a handler that
	// reads a body the middleware cannot (a streamed multipart upload) asks it directly.
	Document *request.Document
	// Outbox adds events to the outbox, refusing those over the producer's message limit
	// (KAFKA_MAX_MESSAGE_BYTES); every repository that emits events uses it.
	Outbox outbox.Writer

	writer    *kafka.Writer
	relay     *outbox.Relay
	consumerM *consumer.Metrics
	lag       *consumer.LagMonitor
	tasks     []lifecycle.Task
	opened    lifecycle.Stack
}

// New connects the database, applies the migrations (the outbox's and the inbox's are
// always included), and builds the server with its readiness checks. Unless GOGC and
// GOMEMLIMIT are set, it sets the garbage collector's target (see DefaultGCPercent).
func New(ctx context.Context, cfg Config, tracing *telemetry.Tracing, log *slog.Logger, migrations ...postgres.MigrationSet) (*Runtime, error) {
	tuneGC()
	rt := &Runtime{Config: cfg, Log: log, Tracer: tracing.Tracer(cfg.Name), Registry: telemetry.NewRegistry(),
		Outbox: outbox.Writer{MaxMessageBytes: cfg.Kafka.MessageLimit()}}
	var extra [][]byte
	if cfg.InternalAuthExtraSecret != nil {
		extra = append(extra, cfg.InternalAuthExtraSecret)
	}
	signer, err := internalauth.New(cfg.InternalAuthSecret, extra...)
	if err != nil {
		return nil, fmt.Errorf("%s: INTERNAL_AUTH_SECRET: %w", cfg.Name, err)
	}
	rt.Signer = signer
	cctx, cancel := context.WithTimeout(ctx, cmp.Or(cfg.ConnectTimeout, 60*time.Second))
	defer cancel()
	wake := outbox.NewWakeup()
	rt.Registry.MustRegister(telemetry.BuildInfo(cfg.Name))
	poolMetrics := postgres.NewPoolMetrics(rt.Registry)
	pool, err := postgres.ConnectWith(cctx, cfg.DatabaseURL, func(c *pgxpool.Config) {
		c.ConnConfig.Tracer = wake
		poolMetrics.Observe(c, cfg.Name, tracing.Provider) // database spans, acquire times
	})
	if err != nil {
		return nil, err
	}
	poolMetrics.Watch(cfg.Name, pool)
	rt.Pool = pool
	rt.opened.Push(pool.Close)
	if cfg.HTTPListener == nil {
		// Bound now, so the probes are answered while the migrations run.
		if cfg.HTTPListener, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			rt.Close()
			return nil, fmt.Errorf("%s: listen %s: %w", cfg.Name, cfg.HTTPAddr, err)
		}
		rt.opened.Push(func() { _ = cfg.HTTPListener.Close() })
		rt.Config.HTTPListener = cfg.HTTPListener
	}
	// Not under the connect deadline: a migration runs as long as it needs (a cut-off
	// one rolled back and the pod restarted into it again), alive but not ready.
	starting := serveStarting(cfg.HTTPListener)
	sets := append([]postgres.MigrationSet{outbox.Migrations, consumer.Migrations}, migrations...)
	err = postgres.MigrateWith(ctx, pool, postgres.MigrateOptions{Log: log, LockTimeout: cfg.MigrationLockTimeout,
		Metrics: postgres.NewMigrationMetrics(rt.Registry)}, sets...)
	starting.stop(ctx)
	if err != nil {
		rt.Close()
		return nil, err
	}
	if rt.Cursors, err = pagination.NewCodec(cfg.CursorSecret); err != nil {
		rt.Close()
		return nil, err
	}
	rt.writer = cfg.Kafka.Writer()
	rt.opened.Push(func() { _ = rt.writer.Close() })
	rt.Registry.MustRegister(events.NewProducerMetrics(rt.writer))
	relayMetrics := outbox.NewMetrics(rt.Registry)
	relayMetrics.Topics(producedTopics(cfg.Name)...)
	rt.relay = &outbox.Relay{Pool: pool, Publisher: rt.writer, Log: log, Wakeup: wake,
		Metrics: relayMetrics, CreateTopics: cfg.Kafka.EnsureTopics}
	rt.Go(lifecycle.Forever(func(ctx context.Context) { wake.Run(ctx, pool, log) }))
	pruner := &retention.Pruner{Pool: pool, Log: log, Interval: cfg.RetentionInterval, Metrics: retention.NewMetrics(rt.Registry),
		Tables: append(consumer.RetentionTables(cfg.InboxRetention, cfg.DeadLetterRetention), outbox.RetentionTables(cfg.DeadLetterRetention)...)}
	rt.Go(pruner.Run)
	probe := cfg.Kafka.NewProbe()
	rt.opened.Push(probe.Close)
	rt.Server = server.New(server.Config{Name: cfg.Name, Addr: cfg.HTTPAddr, Listener: cfg.HTTPListener, BaseURL: cfg.PublicBaseURL,
		ShutdownTimeout: cfg.ShutdownTimeout},
		server.Deps{Log: log, Tracer: rt.Tracer, Registry: rt.Registry, Checks: []server.Check{
			{Name: "database", Fn: postgres.Check(pool)},
			{Name: "kafka", Fn: probe.Check, Optional: true},
		}})
	// No tracer: scrapes are neither traced nor counted as requests.
	rt.Metrics = server.New(server.Config{Name: cfg.Name + "-metrics", Addr: cfg.MetricsAddr, Listener: cfg.MetricsListener,
		BaseURL: cfg.PublicBaseURL, Metrics: true, Pprof: cfg.Pprof, ShutdownTimeout: cfg.ShutdownTimeout},
		server.Deps{Log: log, Registry: rt.Registry})
	doc, err := request.LoadDocument(ctx, api.Spec)
	if err != nil {
		rt.Close()
		return nil, err
	}
	// Every /v0 request is judged by the OpenAPI document before its handler runs.
	rt.API = rt.Server.App.Group("/v0", tenant.Middleware(signer, log), request.TextPath(), doc.Middleware())
	rt.GatewayOnly = internalauth.Middleware(signer, log)
	rt.Document = doc
	return rt, nil
}

// Go adds a background task that runs alongside the server until shutdown.
func (rt *Runtime) Go(task lifecycle.Task) { rt.tasks = append(rt.tasks, task) }

// Consume adds a Kafka consumer as a background task, with the runtime's database,
// logger, tracer and metrics; its group's lag is read from the broker and exported. Its
// topics are created first when missing: a group that joins before a topic exists gets
// no partitions of it until the next rebalance. A broker that is down now is logged, not
// fatal (readiness treats Kafka as optional).
func (rt *Runtime) Consume(c *consumer.Consumer) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := rt.Config.Kafka.EnsureTopics(ctx, c.Topics...); err != nil {
		rt.Log.Warn("consumed topics not ensured; the consumer may miss a topic created later until it rebalances",
			slog.String("consumer", c.Name), slog.Any("error", err))
	}
	cancel()
	if rt.consumerM == nil {
		rt.consumerM = consumer.NewMetrics(rt.Registry)
		rt.lag = consumer.NewLagMonitor(rt.Registry, rt.Config.Kafka, rt.Log)
		rt.Go(lifecycle.Forever(rt.lag.Run))
	}
	rt.lag.Add(c.Name, c.Topics)
	c.Kafka, c.Pool, c.Log, c.Tracer, c.Metrics = rt.Config.Kafka, rt.Pool, rt.Log, rt.Tracer, rt.consumerM
	rt.Go(c.Run)
}

// producedTopics is the topic a service's outbox publishes to, if it is one of the
// platform's (the dead-letter counter starts at 0 for it).
func producedTopics(service string) []string {
	for _, t := range []string{events.TopicTopics, events.TopicPages, events.TopicPersons, events.TopicAssets} {
		if t == service+".events" {
			return []string{t}
		}
	}
	return nil
}

// Run serves and runs the relay and tasks until ctx ends, then shuts down gracefully.
func (rt *Runtime) Run(ctx context.Context) error {
	tasks := append([]lifecycle.Task{rt.relay.Run, rt.Server.Run, rt.Metrics.Run}, rt.tasks...)
	return lifecycle.Run(ctx, tasks...)
}

// Close releases the pool, the Kafka writer and the broker probe.
func (rt *Runtime) Close() { rt.opened.Close() }

// Main is the whole main function of a service: it reads the shared configuration
// (defaultAddr is the local listen address), sets up logs and traces, builds the runtime,
// lets setup add the service's routes and tasks, and runs until SIGINT or SIGTERM.
func Main(name, defaultAddr string, migrations []postgres.MigrationSet, setup func(rt *Runtime, env *config.Env) error) {
	if err := run(name, defaultAddr, migrations, setup); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func run(name, defaultAddr string, migrations []postgres.MigrationSet, setup func(rt *Runtime, env *config.Env) error) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	env := config.FromOS()
	cfg := ConfigFromEnv(env, name, defaultAddr)
	if err := env.Err(); err != nil {
		return err
	}
	log, tracing, shutdown, err := telemetry.Setup(ctx, name, cfg.LogLevel)
	if err != nil {
		return err
	}
	defer shutdown()
	rt, err := New(ctx, cfg, tracing, log, migrations...)
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := setup(rt, env); err != nil {
		return err
	}
	if err := env.Err(); err != nil { // settings the service itself read in setup
		return err
	}
	return rt.Run(ctx)
}
