// Package migrations embeds the pages service's own database schema (pages, audiences,
// versions, messages). Sessions and page links carry their own migration sets.
package migrations

import (
	"embed"

	"github.com/customerapi/platform/libs/postgres"
)

//go:embed *.sql
var fsys embed.FS

// Set is the pages service's core migration set.
var Set = postgres.MigrationSet{Name: "pages", FS: fsys}
