// Package migrations embeds the pages service's database schema as three migration
// sets, applied in this order: the core (pages, audiences, versions, messages), the
// audience sessions (sessions/) and the page links (pagelinks/); the last two reference
// the core's tables. A set's name keys its rows in schema_migrations, so it never changes.
package migrations

import (
	"embed"

	"github.com/customerapi/platform/libs/postgres"
)

//go:embed *.sql sessions/*.sql pagelinks/*.sql
var files embed.FS

// Set is the core migration set: pages, audiences, versions and messages.
var Set = postgres.EmbeddedMigrations("pages", files, ".")

// Sessions is the audience sessions' migration set.
var Sessions = postgres.EmbeddedMigrations("pages-sessions", files, "sessions")

// PageLinks is the page links' migration set.
var PageLinks = postgres.EmbeddedMigrations("pages-pagelinks", files, "pagelinks")

// Sets are the service's migration sets in the order they apply.
var Sets = []postgres.MigrationSet{Set, Sessions, PageLinks}
