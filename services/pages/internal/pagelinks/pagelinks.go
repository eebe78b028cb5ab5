// Package sessions records audience sessions (analytics of one visit, with an optional
// form submission that emits form.submitted), lists and reads them, and computes their
// derived metrics (bounce, time spent) in a background worker.
package pagelinks

import (
	"embed"
	"io/fs"

	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/service"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations is the page links schema; it runs after the pages set.
var Migrations = postgres.MigrationSet{Name: "pages-pagelinks", FS: mustSub(migrationFS, "migrations")}

func mustSub(f fs.FS, dir string) fs.FS {
	s, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // unreachable: the directory is embedded above
	}
	return s
}

// Register mounts the page link routes on rt.API. Page links have no settings.
func Register(rt *service.Runtime, _ *config.Env) error {
	h := &handlers{store: NewStore(rt.Pool), cursors: rt.Cursors}
	h.register(rt.API)
	return nil
}
