// Package migrations embeds the gateway's database schema.
package migrations

import (
	"embed"

	"github.com/customerapi/platform/libs/postgres"
)

//go:embed *.sql
var fsys embed.FS

// Set is the gateway's migration set.
var Set = postgres.MigrationSet{Name: "gateway", FS: fsys}
