package service_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/internalauth"
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/libs/tenant"
)

// The metrics listener serves /metrics, and /debug/pprof only when enabled.
func TestMetricsListener(t *testing.T) {
	s := servicetest.Start(t, "whoami", nil, whoami, servicetest.Options{})
	if status, body := get(t, s.MetricsURL+"/metrics", nil); status != 200 || !strings.Contains(string(body), "go_goroutines") {
		t.Fatalf("the metrics listener does not serve /metrics: %d", status)
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap"} {
		if status, _ := get(t, s.MetricsURL+path, nil); status != 404 {
			t.Errorf("GET %s on the metrics listener answered %d with PPROF_ENABLED off (profiles are off by default)", path, status)
		}
	}
	if status, _ := get(t, s.MetricsURL+"/v0/whoami", map[string]string{tenant.Header: "acme"}); status != 404 {
		t.Errorf("the metrics listener serves the API: %d", status)
	}

	p := servicetest.Start(t, "whoami", nil, whoami, servicetest.Options{Pprof: true})
	if status, _ := get(t, p.MetricsURL+"/debug/pprof/heap", nil); status != 200 {
		t.Errorf("PPROF_ENABLED: /debug/pprof/heap on the metrics listener answered %d", status)
	}
	if status, _ := get(t, p.URL+"/debug/pprof/heap", nil); status != 404 {
		t.Errorf("PPROF_ENABLED: the API listener serves profiles too: %d", status)
	}
}

// files is a service with a tenant route and a route outside /v0 that only the gateway
// may call (as the assets service's signed downloads).
func files(rt *service.Runtime, env *config.Env) error {
	rt.Server.App.Get("/files/:token", rt.GatewayOnly, func(c *fiber.Ctx) error { return c.SendString(c.Params("token")) })
	return whoami(rt, env)
}

func TestOnlyGatewaySignedRequestsAreServed(t *testing.T) {
	s := servicetest.Start(t, "whoami", nil, files, servicetest.Options{})
	now := time.Now()
	gateway, _ := internalauth.New([]byte(servicetest.InternalAuthSecret))
	stranger, _ := internalauth.New([]byte(strings.Repeat("x", 32)))
	acme := internalauth.Claims{TenantID: "acme", KeyID: "key_1", RequestID: "req_1"}
	signed := func(s *internalauth.Signer, c internalauth.Claims, at time.Time) map[string]string {
		h := http.Header{}
		internalauth.Stamp(h, s, c, at)
		out := map[string]string{"X-Request-Id": c.RequestID}
		for k := range h {
			out[k] = h.Get(k)
		}
		return out
	}
	globex := signed(gateway, acme, now)
	globex[tenant.Header] = "globex"
	for _, tc := range []struct {
		name, path string
		header     map[string]string
		status     int
	}{
		{"tenant, signed", "/v0/whoami", signed(gateway, acme, now), 200},
		{"tenant, other secret", "/v0/whoami", signed(stranger, acme, now), 401},
		{"tenant, stale", "/v0/whoami", signed(gateway, acme, now.Add(-2*time.Minute)), 401},
		{"tenant, future", "/v0/whoami", signed(gateway, acme, now.Add(2*time.Minute)), 401},
		{"tenant swapped after signing", "/v0/whoami", globex, 401},
		{"signed without a tenant", "/v0/whoami", signed(gateway, internalauth.Claims{RequestID: "req_1"}, now), 401},
		{"download, signed", "/files/tok", signed(gateway, internalauth.Claims{RequestID: "req_1"}, now), 200},
		{"download, unsigned", "/files/tok", nil, 401},
		{"download, other secret", "/files/tok", signed(stranger, internalauth.Claims{RequestID: "req_1"}, now), 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := get(t, s.URL+tc.path, tc.header)
			if status != tc.status {
				t.Fatalf("GET %s: %d %s, want %d (only what the gateway signed, fresh, is served)", tc.path, status, body, tc.status)
			}
			if tc.path == "/v0/whoami" && status == 200 && !strings.Contains(string(body), `"tenant":"acme"`) {
				t.Fatalf("tenant: %s", body)
			}
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://x", "INTERNAL_AUTH_SECRET": strings.Repeat("s", 32)}
	env := config.FromMap(base)
	c := service.ConfigFromEnv(env, "topics", "127.0.0.1:25011")
	if err := env.Err(); err != nil || c.MetricsAddr != "127.0.0.1:25111" || c.Pprof || len(c.InternalAuthSecret) != 32 {
		t.Fatalf("defaults: %v, METRICS_ADDR %q, PPROF_ENABLED %v", err, c.MetricsAddr, c.Pprof)
	}
	for name, tc := range map[string]struct {
		set  map[string]string
		want string
	}{
		"no internal auth secret": {map[string]string{"INTERNAL_AUTH_SECRET": ""}, "INTERNAL_AUTH_SECRET: is required"},
		"short internal secret":   {map[string]string{"INTERNAL_AUTH_SECRET": "short"}, "INTERNAL_AUTH_SECRET: must hold at least 32 bytes"},
		"short extra secret":      {map[string]string{"INTERNAL_AUTH_EXTRA_SECRET": "short"}, "INTERNAL_AUTH_EXTRA_SECRET"},
		"metrics on the API port": {map[string]string{"HTTP_ADDR": ":8080", "METRICS_ADDR": ":8080"}, "METRICS_ADDR: must differ"},
		"pprof not a boolean":     {map[string]string{"PPROF_ENABLED": "maybe"}, "PPROF_ENABLED"},
	} {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range tc.set {
			m[k] = v
		}
		env := config.FromMap(m)
		service.ConfigFromEnv(env, "topics", "127.0.0.1:25011")
		if err := env.Err(); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%s: want exactly one problem mentioning %q, got %v", name, tc.want, err)
		}
	}
}
