// Package migrations embeds the webhooks service's database schema.
package migrations

import (
	"embed"

	"github.com/customerapi/platform/libs/postgres"
)

//go:embed *.sql
var fsys embed.FS

// Set is the webhooks service's migration set.
var Set = postgres.MigrationSet{Name: "webhooks", FS: fsys}
