// Package application wires the pages service onto the shared service runtime: the
// pages core routes and its version processing worker, the sessions and the page links.
package application

import (
	"time"

	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/services/pages/internal/adapters"
	"github.com/customerapi/platform/services/pages/internal/app"
	"github.com/customerapi/platform/services/pages/internal/pagelinks"
	"github.com/customerapi/platform/services/pages/internal/ports"
	"github.com/customerapi/platform/services/pages/internal/sessions"
	"github.com/customerapi/platform/services/pages/migrations"
)

// Name is the service name.
const Name = "pages"

// DefaultAddr is the local listen address.
const DefaultAddr = "127.0.0.1:25012"

// Migrations are the service's own migration sets: the core (pages, audiences, versions,
// messages), then sessions and page links.
var Migrations = []postgres.MigrationSet{migrations.Set, sessions.Migrations, pagelinks.Migrations}

// Settings are the pages core's own settings (docs/architecture.md lists them).
type Settings struct {
	// Lease is how long a worker holds a version before another may take it over
	// (PAGES_VERSION_LEASE).
	Lease time.Duration
	// Poll is the worker's longest sleep without a notification (PAGES_WORKER_POLL).
	Poll time.Duration
	// Workers is the number of processing workers per replica (PAGES_WORKERS).
	Workers int
}

// SettingsFromEnv reads the settings, recording every problem on env.
func SettingsFromEnv(env *config.Env) Settings {
	s := Settings{
		Lease:   env.Duration("PAGES_VERSION_LEASE", 30*time.Second),
		Poll:    env.Duration("PAGES_WORKER_POLL", time.Second),
		Workers: env.Int("PAGES_WORKERS", 2),
	}
	if s.Lease < 100*time.Millisecond {
		env.Fail("PAGES_VERSION_LEASE", "must be at least 100ms")
	}
	if s.Poll <= 0 {
		env.Fail("PAGES_WORKER_POLL", "must be positive")
	}
	if s.Workers < 0 || s.Workers > 64 {
		env.Fail("PAGES_WORKERS", "must be from 0 to 64")
	}
	return s
}

// Setup adds the pages routes and the version processing workers to a runtime.
func Setup(rt *service.Runtime, env *config.Env) error {
	s := SettingsFromEnv(env)
	if err := env.Err(); err != nil {
		return err
	}
	store := adapters.NewStore(rt.Pool, rt.Outbox)
	h := &ports.Handlers{
		App:     &app.Service{Store: store},
		Cursors: rt.Cursors,
	}
	h.Register(rt.API)
	computeSessions, err := sessions.Register(rt, env)
	if err != nil {
		return err
	}
	if err := pagelinks.Register(rt, env); err != nil {
		return err
	}

	// The background workers, all of them.
	metrics := app.NewMetrics(rt.Registry)
	for range s.Workers {
		w := &app.Worker{Store: store, Pool: rt.Pool, Channel: adapters.WorkChannel, Log: rt.Log, Lease: s.Lease, Poll: s.Poll, Metrics: metrics}
		rt.Go(w.Run)
	}
	rt.Go(computeSessions)
	return nil
}
