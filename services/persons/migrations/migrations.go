// Package migrations embeds the persons service's database schema.
package migrations

import (
	"embed"

	"github.com/customerapi/platform/libs/postgres"
)

//go:embed *.sql
var fsys embed.FS

// Set is the persons service's migration set.
var Set = postgres.MigrationSet{Name: "persons", FS: fsys}
