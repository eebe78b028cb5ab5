package application

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/postgres/pgtest"
)

// stalledUpload opens an upload of a 1 MiB body through the gateway, sends 16 KiB of it
// and stops; the connection stays open until the test closes it.
func stalledUpload(t *testing.T, public, key string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(public, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /v0/assets HTTP/1.1\r\nHost: gateway\r\nx-api-key: %s\r\n"+
		"Content-Type: multipart/form-data; boundary=x\r\nContent-Length: %d\r\n\r\n", key, 1<<20)
	if _, err := conn.Write(make([]byte, 16<<10)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// A tenant's uploads past UploadsPerTenant are refused by the gateway itself, with 429
// and Retry-After, before their bodies are read: the assets service's own cap cannot
// answer a stalled upload, since the gateway is still sending it the body (200 stalled
// uploads of one tenant were all held open). Another tenant uploads meanwhile, and the
// tenant again once its uploads end.
func TestUploadsPastTheTenantsCapAreRefusedAtTheGateway(t *testing.T) {
	up := newSink(t, 0)
	g := start(t, pgtest.NewDatabase(t), map[string]string{"assets": up.srv.URL}, func(c *Config) {
		c.Proxy.UploadsPerTenant = 2
		c.Proxy.TransferTimeout = 30 * time.Second
	})
	_, acme := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	_, beta := g.newKey(t, map[string]any{"tenantIds": []string{"beta"}})
	stalled := []net.Conn{stalledUpload(t, g.public, acme), stalledUpload(t, g.public, acme)}
	time.Sleep(200 * time.Millisecond) // both are in flight at the service

	third := stalledUpload(t, g.public, acme)
	_ = third.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil {
		t.Fatalf("an upload past the tenant's cap of 2 must be answered at once, while its body is unsent: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"RATE_LIMITED"`) {
		t.Fatalf("an upload past the tenant's cap: %d Retry-After %q %s, want 429 RATE_LIMITED with Retry-After",
			resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}

	upload := func(key string) int {
		req, _ := http.NewRequest("POST", g.public+"/v0/assets", strings.NewReader("x"))
		req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
		req.Header.Set("x-api-key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := upload(beta); s != 200 {
		t.Fatalf("another tenant's upload while acme is at its cap: %d, want 200 (each tenant has its own cap)", s)
	}
	for _, c := range stalled {
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for s := upload(acme); s != 200; s = upload(acme) {
		if time.Now().After(deadline) {
			t.Fatalf("acme's upload after its stalled uploads ended: %d, want 200 (the slots must come back)", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
