// Package domain imports what a domain may: the standard library, its own domain/** and
// the pure libs on its allow-list. No finding here.
package domain

import (
	_ "time"

	_ "github.com/customerapi/platform/libs/events"
	_ "github.com/customerapi/platform/libs/ids"
	_ "github.com/customerapi/platform/libs/timestamp"
	_ "github.com/customerapi/platform/services/topics/internal/domain/rules"
)
