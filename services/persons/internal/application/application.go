// Package application wires the persons service onto the shared service runtime: the
// HTTP routes and the form enrichment consumer.
package application

import (
	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/consumer"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/services/persons/internal/adapters"
	"github.com/customerapi/platform/services/persons/internal/app"
	"github.com/customerapi/platform/services/persons/internal/ports"
	"github.com/customerapi/platform/services/persons/migrations"
)

// Name is the service name.
const Name = "persons"

// DefaultAddr is the local listen address.
const DefaultAddr = "127.0.0.1:25013"

// EnrichmentConsumer is the consumer group (and inbox name) of the form enrichment.
const EnrichmentConsumer = "persons-enrichment"

// Migrations are the service's own migration sets.
var Migrations = []postgres.MigrationSet{migrations.Set}

// Setup adds the persons routes and the form enrichment consumer to a runtime.
func Setup(rt *service.Runtime, _ *config.Env) error {
	store := adapters.NewStore(rt.Pool, rt.Outbox)
	svc := &app.Service{Repo: store}
	h := &ports.Handlers{App: svc, Cursors: rt.Cursors}
	h.Register(rt.API)
	enrichment := &ports.Enrichment{App: svc, Steps: store.Enrichments}

	rt.Consume(&consumer.Consumer{
		Name:    EnrichmentConsumer,
		Topics:  []string{events.TopicPages},
		Types:   []string{events.TypeFormSubmitted},
		Handler: enrichment.Handle,
	})
	return nil
}
