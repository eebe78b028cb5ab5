package application_test

import (
	"testing"
	"time"

	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/services/pages/internal/application"
	"github.com/customerapi/platform/services/pages/internal/domain/session"
)

func TestSessionSettingsFromEnv(t *testing.T) {
	env := config.FromMap(nil)
	if s := application.SessionSettingsFromEnv(env); env.Err() != nil || s.Metrics != session.DefaultMetrics || s.Idle != 2*time.Second {
		t.Fatalf("defaults = %+v, %v", s, env.Err())
	}
	for name, vars := range map[string]map[string]string{
		"zero threshold":      {"SESSION_BOUNCE_THRESHOLD": "0s"},
		"max below threshold": {"SESSION_BOUNCE_THRESHOLD": "1m", "SESSION_MAX_DURATION": "30s"},
		"no interval":         {"SESSION_COMPUTE_INTERVAL": "0s"},
		"not a duration":      {"SESSION_COMPUTE_INTERVAL": "soon"},
	} {
		env := config.FromMap(vars)
		application.SessionSettingsFromEnv(env)
		if env.Err() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
