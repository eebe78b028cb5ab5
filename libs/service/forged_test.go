package service_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/libs/tenant"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// whoami is a service with one tenant route that answers with the caller's tenant.
func whoami(rt *service.Runtime, _ *config.Env) error {
	rt.API.Get("/whoami", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"tenant": tenant.From(c)}) })
	return nil
}

func get(t *testing.T, url string, header map[string]string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// A request sent straight to a service's port, bypassing the gateway, cannot act as a
// tenant by setting the tenant header: without the gateway's valid signature it is 401.
func TestForgedTenantHeaderIsRefused(t *testing.T) {
	s := servicetest.Start(t, "whoami", nil, whoami, servicetest.Options{})
	for name, header := range map[string]map[string]string{
		"tenant header alone":  {tenant.Header: "acme"},
		"with a key ID":        {tenant.Header: "acme", tenant.KeyHeader: "key_1"},
		"with a made-up value": {tenant.Header: "acme", "X-Internal-Signature": "v1,t=1750000000,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="},
		"with garbage":         {tenant.Header: "acme", "X-Internal-Signature": "trust me"},
	} {
		t.Run(name, func(t *testing.T) {
			status, body := get(t, s.URL+"/v0/whoami", header)
			var e apierror.Envelope
			if status != 401 || json.Unmarshal(body, &e) != nil || e.Code != apierror.CodeUnauthorized {
				t.Fatalf("a forged tenant header reached the service's routes: %d %s (want 401 UNAUTHORIZED: "+
					"only requests the gateway signed may carry a tenant)", status, body)
			}
		})
	}
}

// The API listener serves neither metrics nor profiles: whoever reaches it (the gateway)
// reads no internals through it.
func TestAPIListenerServesNoMetricsOrProfiles(t *testing.T) {
	s := servicetest.Start(t, "whoami", nil, whoami, servicetest.Options{})
	for _, path := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		if status, _ := get(t, s.URL+path, nil); status != 404 {
			t.Errorf("the API listener answers GET %s with %d: metrics and profiles belong on the metrics listener only", path, status)
		}
	}
}
