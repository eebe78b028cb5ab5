// Package sessions records audience sessions (analytics of one visit, with an optional
// form submission that emits form.submitted), lists and reads them, and computes their
// derived metrics (bounce, time spent) in a background worker.
package sessions

import (
	"context"
	"embed"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/lifecycle"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/service"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations is the sessions schema; it runs after the pages set (it references pages).
var Migrations = postgres.EmbeddedMigrations("pages-sessions", migrationFS, "migrations")

// Settings are the sessions' own settings (docs/architecture.md lists them).
type Settings struct {
	// Metrics holds SESSION_BOUNCE_THRESHOLD and SESSION_MAX_DURATION.
	Metrics Metrics
	// Idle is how often the worker looks for pending sessions when nothing woke it
	// (SESSION_COMPUTE_INTERVAL): sessions recorded by another replica, or left pending
	// by a crash.
	Idle time.Duration
}

// SettingsFromEnv reads the settings, recording every problem on env.
func SettingsFromEnv(env *config.Env) Settings {
	s := Settings{
		Metrics: Metrics{
			BounceThreshold: env.Duration("SESSION_BOUNCE_THRESHOLD", DefaultMetrics.BounceThreshold),
			MaxDuration:     env.Duration("SESSION_MAX_DURATION", DefaultMetrics.MaxDuration),
		},
		Idle: env.Duration("SESSION_COMPUTE_INTERVAL", 2*time.Second),
	}
	if s.Metrics.BounceThreshold <= 0 {
		env.Fail("SESSION_BOUNCE_THRESHOLD", "must be positive")
	}
	if s.Metrics.MaxDuration < s.Metrics.BounceThreshold {
		env.Fail("SESSION_MAX_DURATION", "must be at least SESSION_BOUNCE_THRESHOLD")
	}
	if s.Idle <= 0 || s.Idle > time.Hour {
		env.Fail("SESSION_COMPUTE_INTERVAL", "must be positive and at most 1h")
	}
	return s
}

// Register mounts the session routes on rt.API and returns the worker that computes
// the sessions' metrics, for the service's wiring to run with its other workers.
func Register(rt *service.Runtime, env *config.Env) (lifecycle.Task, error) {
	s := SettingsFromEnv(env)
	if err := env.Err(); err != nil {
		return nil, err
	}
	store := NewStore(rt.Pool, rt.Outbox)
	w := &worker{store: store, metrics: s.Metrics, idle: s.Idle, log: rt.Log, wake: make(chan struct{}, 1),
		counts: newCounters(rt.Registry)}
	h := &handlers{store: store, cursors: rt.Cursors, computed: w.poke}
	h.register(rt.API)
	return w.run, nil
}

// worker computes the derived metrics of pending sessions. Several replicas may run it:
// each claims rows with SKIP LOCKED, so a session is computed by one of them, once.
type worker struct {
	store   *Store
	metrics Metrics
	idle    time.Duration
	log     *slog.Logger
	wake    chan struct{}
	counts  *counters
}

// counters are the worker's Prometheus metrics.
type counters struct {
	computed *prometheus.CounterVec
	failures prometheus.Counter
}

func newCounters(r prometheus.Registerer) *counters {
	c := &counters{
		computed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pages_sessions_computed_total",
			Help: "Audience sessions whose derived metrics were computed, by outcome (completed, failed)."}, []string{"status"}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "pages_sessions_compute_errors_total",
			Help: "Runs of the session computation that failed (database errors); retried with backoff."}),
	}
	r.MustRegister(c.computed, c.failures)
	return c
}

// batch is how many sessions one transaction computes.
const batch = 100

// poke wakes the worker; it never blocks.
func (w *worker) poke() {
	select {
	case w.wake <- struct{}{}:
	default: // a wake-up is already pending; it covers this one
	}
}

func (w *worker) run(ctx context.Context) error {
	t := time.NewTicker(w.idle)
	defer t.Stop()
	backoff := 200 * time.Millisecond
	for {
		done, err := w.store.ComputePending(ctx, w.metrics, batch, time.Now().UTC())
		w.counts.computed.WithLabelValues(StatusCompleted).Add(float64(done.Completed))
		w.counts.computed.WithLabelValues(StatusFailed).Add(float64(done.Failed))
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			w.counts.failures.Inc()
			w.log.Warn("computing session metrics failed; retrying", slog.Any("error", err), slog.Duration("backoff", backoff))
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 10*time.Second)
			continue
		case done.Total() == batch:
			continue // more may be waiting
		}
		backoff = 200 * time.Millisecond
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake:
		case <-t.C:
		}
	}
}
