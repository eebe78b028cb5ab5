// Package application wires the webhooks service onto the shared service runtime: the
// subscription routes, the intake consumer and the delivery engine.
package application

import (
	"context"
	"time"

	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/consumer"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/lifecycle"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/retention"
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/services/webhooks/internal/adapters"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/apidoc"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/metrics"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/secretbox"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/sender"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/ssrf"
	"github.com/customerapi/platform/services/webhooks/internal/app"
	"github.com/customerapi/platform/services/webhooks/internal/app/delivery"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
	"github.com/customerapi/platform/services/webhooks/internal/ports"
	"github.com/customerapi/platform/services/webhooks/migrations"
)

// Name is the service name.
const Name = "webhooks"

// DefaultAddr is the local listen address.
const DefaultAddr = "127.0.0.1:25015"

// Migrations are the service's own migration sets.
var Migrations = []postgres.MigrationSet{migrations.Set}

// IntakeConsumer is the consumer group (and inbox name) of the intake.
const IntakeConsumer = "webhooks-intake"

// Settings are the webhooks service's own settings (docs/architecture.md lists them).
type Settings struct {
	// Retry schedules retries (WEBHOOK_RETRY_SCHEDULE, WEBHOOK_RETRY_JITTER_PERCENT,
	// WEBHOOK_RETRY_AFTER_MAX).
	Retry domain.RetryPolicy
	// Timeout bounds one attempt (WEBHOOK_TIMEOUT).
	Timeout time.Duration
	// DisableAfter is the failure streak that disables a subscription (WEBHOOK_DISABLE_AFTER).
	DisableAfter time.Duration
	// AllowPrivate lets deliveries reach private, loopback and link-local addresses
	// (WEBHOOK_ALLOW_PRIVATE_TARGETS; local development only).
	AllowPrivate bool
	// Workers, PerTenant and PerSubscription bound the attempts a replica makes in all,
	// per tenant and per subscription (WEBHOOK_WORKERS, WEBHOOK_TENANT_CONCURRENCY,
	// WEBHOOK_SUBSCRIPTION_CONCURRENCY).
	Workers, PerTenant, PerSubscription int
	// Retention is how long finished deliveries are kept (WEBHOOK_RETENTION, 0 = forever).
	Retention time.Duration
	// EventRetention is how long events are kept for the events API and replays
	// (EVENT_RETENTION, 0 = forever).
	EventRetention time.Duration
	// Secrets seal the signing secrets at rest (WEBHOOK_SECRETS_KEYS, required:
	// "<key ID>:<base64 of 32 bytes>", comma-separated, the first sealing, all opening).
	Secrets *secretbox.Keyring
	// ResealEvery is how often stored secrets not sealed under the primary key are sealed
	// again (WEBHOOK_SECRETS_RESEAL_INTERVAL; also at start).
	ResealEvery time.Duration
}

// defaultTenantConcurrency is the default WEBHOOK_TENANT_CONCURRENCY, a quarter of the
// default WEBHOOK_WORKERS; a replica with fewer workers defaults to all of them.
const defaultTenantConcurrency = 64

// SettingsFromEnv reads the settings, recording every problem on env.
func SettingsFromEnv(env *config.Env) Settings {
	s := Settings{
		Retry: domain.RetryPolicy{
			Schedule:      env.Durations("WEBHOOK_RETRY_SCHEDULE", domain.DefaultSchedule),
			Jitter:        float64(env.Int("WEBHOOK_RETRY_JITTER_PERCENT", 20)) / 100,
			RetryAfterMin: time.Second,
			RetryAfterMax: env.Duration("WEBHOOK_RETRY_AFTER_MAX", time.Hour),
		},
		Timeout:         env.Duration("WEBHOOK_TIMEOUT", 10*time.Second),
		DisableAfter:    env.Duration("WEBHOOK_DISABLE_AFTER", 5*24*time.Hour),
		AllowPrivate:    env.Bool("WEBHOOK_ALLOW_PRIVATE_TARGETS", false),
		Workers:         env.Int("WEBHOOK_WORKERS", 256),
		PerSubscription: env.Int("WEBHOOK_SUBSCRIPTION_CONCURRENCY", 8),
		Retention:       env.Duration("WEBHOOK_RETENTION", 30*24*time.Hour),
		EventRetention:  env.Duration("EVENT_RETENTION", 30*24*time.Hour),
		ResealEvery:     env.Duration("WEBHOOK_SECRETS_RESEAL_INTERVAL", 10*time.Minute),
	}
	if spec := env.String(secretbox.EnvVar, ""); spec == "" {
		env.Fail(secretbox.EnvVar, "is required: the keys that seal the webhook signing secrets at rest, "+
			`"<key ID>:<base64 of 32 bytes>[,<older key ID>:<base64>...]" (openssl rand -base64 32; docs/security.md)`)
	} else if keys, err := secretbox.Parse(spec); err != nil {
		env.Fail(secretbox.EnvVar, "%v", err) // never the value: it is the key
	} else {
		s.Secrets = keys
	}
	if s.ResealEvery <= 0 {
		env.Fail("WEBHOOK_SECRETS_RESEAL_INTERVAL", "must be positive")
	}
	s.PerTenant = env.Int("WEBHOOK_TENANT_CONCURRENCY", min(defaultTenantConcurrency, max(s.Workers, 1)))
	for _, d := range s.Retry.Schedule {
		if d <= 0 {
			env.Fail("WEBHOOK_RETRY_SCHEDULE", "every wait must be positive")
			break
		}
	}
	if s.Retry.Jitter < 0 || s.Retry.Jitter >= 1 {
		env.Fail("WEBHOOK_RETRY_JITTER_PERCENT", "must be from 0 to 99")
	}
	if s.Retry.RetryAfterMax < s.Retry.RetryAfterMin {
		env.Fail("WEBHOOK_RETRY_AFTER_MAX", "must be at least %s", s.Retry.RetryAfterMin)
	}
	if s.Timeout <= 0 || s.Timeout > 5*time.Minute {
		env.Fail("WEBHOOK_TIMEOUT", "must be positive and at most 5m")
	}
	if s.DisableAfter <= 0 {
		env.Fail("WEBHOOK_DISABLE_AFTER", "must be positive")
	}
	if s.Workers < 1 || s.Workers > 100000 {
		env.Fail("WEBHOOK_WORKERS", "must be from 1 to 100000")
	}
	if s.PerSubscription < 1 || s.PerSubscription > s.Workers {
		env.Fail("WEBHOOK_SUBSCRIPTION_CONCURRENCY", "must be from 1 to WEBHOOK_WORKERS")
	}
	if s.PerTenant < 1 || s.PerTenant > s.Workers {
		env.Fail("WEBHOOK_TENANT_CONCURRENCY", "must be from 1 to WEBHOOK_WORKERS")
	}
	return s
}

// Options are hooks for tests.
type Options struct {
	// Resolver replaces the system's name resolution (tests need no DNS).
	Resolver ssrf.Resolver
	// Idle is the engine's backstop wake-up (default one minute).
	Idle time.Duration
}

// Setup adds the webhooks routes, the intake and the delivery engine to a runtime.
func Setup(rt *service.Runtime, env *config.Env) error { return SetupWith(Options{})(rt, env) }

// SetupWith returns a Setup using the given hooks.
func SetupWith(o Options) func(*service.Runtime, *config.Env) error {
	return func(rt *service.Runtime, env *config.Env) error {
		s := SettingsFromEnv(env)
		if err := env.Err(); err != nil {
			return err
		}
		if o.Idle <= 0 {
			o.Idle = time.Minute
		}
		store := adapters.NewStore(rt.Pool, s.Secrets)
		// Plaintext rows (written before sealing) and rows under an older key are sealed
		// again under the primary key, at start and then periodically.
		rt.Go(lifecycle.Forever(func(ctx context.Context) { app.RunReseal(ctx, store, s.ResealEvery, rt.Log) }))
		guard := ssrf.NewGuard(ssrf.Policy{AllowPrivate: s.AllowPrivate}, o.Resolver, min(s.Timeout, 5*time.Second))
		svc := &app.Service{Repo: store, URLs: guard, Types: apidoc.New(), Log: rt.Log}
		(&ports.Handlers{App: svc, Cursors: rt.Cursors}).Register(rt.API)

		rt.Consume(&consumer.Consumer{
			Name:    IntakeConsumer,
			Topics:  []string{events.TopicPages, events.TopicPersons},
			Types:   events.ProducedTypes, // operational types come from this service only
			Handler: (&ports.Intake{App: svc, In: adapters.Intake}).Handle,
		})

		attempts := sender.New(guard, s.Timeout, s.PerSubscription*2)
		attempts.Tracer = rt.Tracer // a span per attempt
		attempts.Log = rt.Log       // which address a refused attempt's host resolved to
		engine := delivery.New(delivery.Config{
			Workers:           s.Workers,
			TenantConcurrency: s.PerTenant,
			PerSubscription:   s.PerSubscription,
			// Long enough for the attempts ahead in its lane and its own.
			Lease:         5*s.Timeout + 30*time.Second,
			ClaimBatch:    100,
			Policy:        s.Retry,
			DisableAfter:  s.DisableAfter,
			ShutdownGrace: min(s.Timeout, 5*time.Second),
			Idle:          o.Idle,
		}, store, attempts, &adapters.Listener{Pool: rt.Pool, Log: rt.Log}, rt.Log, metrics.New(rt.Registry, store.Stats, rt.Log))
		rt.Go(func(ctx context.Context) error {
			defer attempts.Close()
			return engine.Run(ctx)
		})
		// Events past EVENT_RETENTION, by libs/retention's pruner (0 keeps them).
		rt.Go((&retention.Pruner{Pool: rt.Pool, Log: rt.Log,
			Tables: []retention.Table{{Name: "events", Column: "created_at", Keep: s.EventRetention}}}).Run)
		if s.Retention > 0 {
			rt.Go(lifecycle.Forever(func(ctx context.Context) { app.RunRetention(ctx, store, s.Retention, rt.Log) }))
		}
		return nil
	}
}
