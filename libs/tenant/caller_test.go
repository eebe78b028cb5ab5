package tenant_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/internalauth"
	"github.com/customerapi/platform/libs/requestid"
	"github.com/customerapi/platform/libs/telemetry"
	"github.com/customerapi/platform/libs/tenant"
)

// Every line a handler logs with the request's context names the tenant and the key the
// gateway signed for, so a question about one tenant can be answered from the logs.
func TestLogLinesOfARequestCarryTheTenantAndKey(t *testing.T) {
	signer, err := internalauth.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := telemetry.NewLogger(&buf, "svc", "info")
	app := fiber.New()
	app.Use(requestid.Middleware())
	app.Get("/v0/x", tenant.Middleware(signer, log), func(c *fiber.Ctx) error {
		log.InfoContext(c.UserContext(), "handled")
		return c.SendStatus(204)
	})
	req := httptest.NewRequest("GET", "/v0/x", nil)
	req.Header.Set(requestid.Header, "req_1")
	internalauth.Stamp(req.Header, signer, internalauth.Claims{TenantID: "acme", KeyID: "key_1", RequestID: "req_1"}, time.Now())
	resp, err := app.Test(req, -1)
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("status %v, %v", resp.StatusCode, err)
	}
	var rec map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &rec); err != nil {
		t.Fatalf("not one JSON line: %s", buf.String())
	}
	if rec["tenant_id"] != "acme" || rec["key_id"] != "key_1" || rec["request_id"] != "req_1" {
		t.Fatalf("log line %v lacks tenant_id=acme, key_id=key_1", rec)
	}
}
