// Package app imports what app may: the standard library, its own app/** and domain/**,
// the libs on its allow-list and Prometheus. No finding here.
package app

import (
	_ "log/slog"

	_ "github.com/customerapi/platform/libs/events"
	_ "github.com/customerapi/platform/services/topics/internal/app/worker"
	_ "github.com/customerapi/platform/services/topics/internal/domain"
	_ "github.com/customerapi/platform/services/topics/internal/domain/rules"
	_ "github.com/prometheus/client_golang/prometheus"
)
