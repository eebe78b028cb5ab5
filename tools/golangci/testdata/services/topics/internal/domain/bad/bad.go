// Package bad breaks each rule of domain once: five findings from list 'domain'.
package bad

import (
	_ "github.com/customerapi/platform/libs/events/kafkatest"        // a sub-package of an allowed lib is not allowed
	_ "github.com/customerapi/platform/services/topics/internal/app" // another layer
	_ "github.com/gofiber/fiber/v2"                                  // an HTTP framework
	_ "github.com/jackc/pgx/v5"                                      // a database driver
	_ "github.com/prometheus/client_golang/prometheus"               // on app's list, not on domain's
)
