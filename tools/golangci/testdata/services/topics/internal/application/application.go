// Package application is the wiring: it may import every layer. No finding here.
package application

import (
	_ "github.com/customerapi/platform/services/topics/internal/adapters"
	_ "github.com/customerapi/platform/services/topics/internal/app"
	_ "github.com/customerapi/platform/services/topics/internal/dispatch"
	_ "github.com/customerapi/platform/services/topics/internal/ports"
)
