// Package adapters imports what an adapter may: its own adapters/** and domain/**, and any
// driver. No finding here.
package adapters

import (
	_ "github.com/customerapi/platform/services/topics/internal/adapters/memqueue"
	_ "github.com/customerapi/platform/services/topics/internal/domain"
	_ "github.com/jackc/pgx/v5"
)
