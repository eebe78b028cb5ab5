// Package ports imports what a port may: its own ports/**, app/** and domain/**, and HTTP.
// No finding here.
package ports

import (
	_ "github.com/customerapi/platform/services/topics/internal/app"
	_ "github.com/customerapi/platform/services/topics/internal/domain"
	_ "github.com/customerapi/platform/services/topics/internal/ports/views"
	_ "github.com/gofiber/fiber/v2"
)
