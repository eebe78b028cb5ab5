// Package pagelinks serves the pages service's page links: paths on a tenant's domains
// that point at a page, an audience or page routing, with their own migration set.
package pagelinks

import (
	"embed"

	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/service"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations is the page links schema; it runs after the pages set.
var Migrations = postgres.EmbeddedMigrations("pages-pagelinks", migrationFS, "migrations")

// Register mounts the page link routes on rt.API. Page links have no settings.
func Register(rt *service.Runtime, _ *config.Env) error {
	h := &handlers{store: NewStore(rt.Pool), cursors: rt.Cursors}
	h.register(rt.API)
	return nil
}
