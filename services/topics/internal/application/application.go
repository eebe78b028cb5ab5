// Package application wires the topics service onto the shared service runtime.
package application

import (
	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/services/topics/internal/adapters"
	"github.com/customerapi/platform/services/topics/internal/app"
	"github.com/customerapi/platform/services/topics/internal/ports"
	"github.com/customerapi/platform/services/topics/migrations"
)

// Name is the service name.
const Name = "topics"

// DefaultAddr is the local listen address.
const DefaultAddr = "127.0.0.1:25011"

// Migrations are the service's own migration sets.
var Migrations = []postgres.MigrationSet{migrations.Set}

// Setup adds the topics routes to a runtime.
func Setup(rt *service.Runtime, _ *config.Env) error {
	h := &ports.Handlers{
		App:     &app.Service{Repo: adapters.NewStore(rt.Pool, rt.Outbox)},
		Cursors: rt.Cursors,
	}
	h.Register(rt.API)
	return nil
}
