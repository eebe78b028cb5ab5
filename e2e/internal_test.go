package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/customerapi/platform/libs/devstack"
)

// servicePaths is one tenant route of each service.
var servicePaths = map[string]string{
	"topics": "/v0/topics", "pages": "/v0/pages", "persons": "/v0/persons",
	"assets": "/v0/assets", "webhooks": "/v0/webhook_subscriptions",
}

func direct(t *testing.T, method, url string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Something that reaches a service's port without going through the gateway cannot act
// as a tenant with the tenant header, nor fetch a signed download, while the same
// requests through the gateway work.
func TestServicesRefuseRequestsTheGatewayDidNotSign(t *testing.T) {
	s := local(t)
	for _, spec := range devstack.Services {
		base := s.ServiceURL(spec.Name)
		if base == "" {
			continue
		}
		for name, header := range map[string]map[string]string{
			"no signature":     {"X-Internal-Tenant-Id": "acme", "X-Internal-Key-Id": "key_1"},
			"forged signature": {"X-Internal-Tenant-Id": "acme", "X-Internal-Signature": "v1,t=1750000000,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="},
		} {
			status, body := direct(t, "GET", base+servicePaths[spec.Name], header)
			if status != 401 || !strings.Contains(body, `"code":"UNAUTHORIZED"`) {
				t.Errorf("%s, %s: a forged tenant header straight to the service got %d %s, want 401", spec.Name, name, status, body)
			}
		}
	}
	if s.ServiceURL("assets") == "" {
		return
	}
	c := api(t, newKey(t, nil))
	img := assetPNG(4, 4)
	a := must(t, assetUpload(c, assetFile("a.png", img), assetField("type", "image")), 201)
	link, _ := url.Parse(a["downloadUrl"].(string))
	if r := assetFetch(t, link.String()); r.Status != 200 || !bytes.Equal(r.Body, img) {
		t.Fatalf("download through the gateway: %d (%d bytes)", r.Status, len(r.Body))
	}
	token := strings.TrimPrefix(link.Path, "/v0/asset_files/")
	if status, body := direct(t, "GET", s.ServiceURL("assets")+"/files/"+token, nil); status != 401 {
		t.Errorf("a download straight from the assets service, with a valid token but no gateway signature: %d %s, want 401", status, body)
	}
}

// Each service serves /metrics on its metrics listener only; profiles are off by default.
func TestMetricsOnlyOnTheMetricsListener(t *testing.T) {
	s := local(t)
	for _, spec := range devstack.Services {
		base, metrics := s.ServiceURL(spec.Name), s.MetricsURL(spec.Name)
		if base == "" {
			continue
		}
		for _, path := range []string{"/metrics", "/debug/pprof/"} {
			if status, _ := direct(t, "GET", base+path, nil); status != 404 {
				t.Errorf("%s: the API listener answers %s with %d, want 404", spec.Name, path, status)
			}
		}
		if status, body := direct(t, "GET", metrics+"/metrics", nil); status != 200 || !strings.Contains(body, "go_goroutines") {
			t.Errorf("%s: the metrics listener answers /metrics with %d: %s", spec.Name, status, clip(body, 500))
		}
		if status, _ := direct(t, "GET", metrics+"/debug/pprof/", nil); status != 404 {
			t.Errorf("%s: profiles are served without PPROF_ENABLED: %d", spec.Name, status)
		}
	}
}
