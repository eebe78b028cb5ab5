// Package application wires the pages service onto the shared service runtime: the
// routes of the core, the audience sessions and the page links, the version processing
// workers and the session computation worker.
package application

import (
	"time"

	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/services/pages/internal/adapters"
	linkstore "github.com/customerapi/platform/services/pages/internal/adapters/pagelinks"
	sessionstore "github.com/customerapi/platform/services/pages/internal/adapters/sessions"
	"github.com/customerapi/platform/services/pages/internal/app"
	linkapp "github.com/customerapi/platform/services/pages/internal/app/pagelinks"
	sessionapp "github.com/customerapi/platform/services/pages/internal/app/sessions"
	"github.com/customerapi/platform/services/pages/internal/ports"
	linkports "github.com/customerapi/platform/services/pages/internal/ports/pagelinks"
	sessionports "github.com/customerapi/platform/services/pages/internal/ports/sessions"
	"github.com/customerapi/platform/services/pages/migrations"
)

// Name is the service name.
const Name = "pages"

// DefaultAddr is the local listen address.
const DefaultAddr = "127.0.0.1:25012"

// Migrations are the service's own migration sets: the core (pages, audiences, versions,
// messages), then the audience sessions and the page links.
var Migrations = migrations.Sets

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

// Setup adds the pages routes (core, audience sessions, page links) and the background
// workers (version processing, session computation) to a runtime.
func Setup(rt *service.Runtime, env *config.Env) error {
	s := SettingsFromEnv(env)
	ss := SessionSettingsFromEnv(env)
	if err := env.Err(); err != nil {
		return err
	}
	store := adapters.NewStore(rt.Pool, rt.Outbox)
	sessionStore := sessionstore.NewStore(rt.Pool, rt.Outbox)
	computeSessions := sessionapp.NewWorker(sessionStore, ss.Metrics, ss.Idle, rt.Log, sessionapp.NewMetrics(rt.Registry))

	// The routes.
	(&ports.Handlers{App: &app.Service{Store: store}, Cursors: rt.Cursors}).Register(rt.API)
	(&sessionports.Handlers{App: &sessionapp.Service{Store: sessionStore, Recorded: computeSessions.Poke},
		Cursors: rt.Cursors}).Register(rt.API)
	(&linkports.Handlers{App: &linkapp.Service{Store: linkstore.NewStore(rt.Pool)}, Cursors: rt.Cursors}).Register(rt.API)

	// The background workers, all of them.
	metrics := app.NewMetrics(rt.Registry)
	if s.Workers > 0 {
		w := &app.Worker{Store: store, Wakeups: adapters.Listener{Pool: rt.Pool, Poll: s.Poll, Log: rt.Log},
			Goroutines: s.Workers, Log: rt.Log, Lease: s.Lease, Metrics: metrics}
		rt.Go(w.Run)
	}
	rt.Go(computeSessions.Run)
	return nil
}
