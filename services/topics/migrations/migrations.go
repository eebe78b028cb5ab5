// Package migrations embeds the topics service's database schema.
package migrations

import (
	"embed"

	"github.com/customerapi/platform/libs/postgres"
)

//go:embed *.sql
var fsys embed.FS

// Set is the topics service's migration set.
var Set = postgres.MigrationSet{Name: "topics", FS: fsys}
