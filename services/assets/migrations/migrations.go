// Package migrations embeds the assets service's database schema.
package migrations

import (
	"embed"

	"github.com/customerapi/platform/libs/postgres"
)

//go:embed *.sql
var fsys embed.FS

// Set is the assets service's migration set.
var Set = postgres.MigrationSet{Name: "assets", FS: fsys}
