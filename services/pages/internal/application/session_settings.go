package application

import (
	"time"

	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/services/pages/internal/domain/session"
)

// SessionSettings are the audience sessions' own settings (docs/architecture.md lists
// them).
type SessionSettings struct {
	// Metrics holds SESSION_BOUNCE_THRESHOLD and SESSION_MAX_DURATION.
	Metrics session.Metrics
	// Idle is how often the worker looks for pending sessions when nothing woke it
	// (SESSION_COMPUTE_INTERVAL): sessions recorded by another replica, or left pending
	// by a crash.
	Idle time.Duration
}

// SessionSettingsFromEnv reads the session settings, recording every problem on env.
func SessionSettingsFromEnv(env *config.Env) SessionSettings {
	s := SessionSettings{
		Metrics: session.Metrics{
			BounceThreshold: env.Duration("SESSION_BOUNCE_THRESHOLD", session.DefaultMetrics.BounceThreshold),
			MaxDuration:     env.Duration("SESSION_MAX_DURATION", session.DefaultMetrics.MaxDuration),
		},
		Idle: env.Duration("SESSION_COMPUTE_INTERVAL", 2*time.Second),
	}
	if s.Metrics.BounceThreshold <= 0 {
		env.Fail("SESSION_BOUNCE_THRESHOLD", "must be positive")
	}
	if s.Metrics.MaxDuration < s.Metrics.BounceThreshold {
		env.Fail("SESSION_MAX_DURATION", "must be at least SESSION_BOUNCE_THRESHOLD")
	}
	if s.Idle <= 0 || s.Idle > time.Hour {
		env.Fail("SESSION_COMPUTE_INTERVAL", "must be positive and at most 1h")
	}
	return s
}
